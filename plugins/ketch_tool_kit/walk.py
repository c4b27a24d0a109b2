"""Walking a directory the way git sees it: ``.gitignore`` (nested), ``.ignore``,
``.git/info/exclude`` and the global git excludes are respected, ``.git`` itself is
skipped, and symlinks are listed but never followed (a link to ``/etc`` must not
pull ``/etc`` into a listing or a search).

The matching is done by ripgrep's own ``ignore`` crate (through ``ignore-python``,
MIT), so ``glob``, ``list_dir`` and the Python grep agree with ``rg``. It applies
outside git repositories too, as ``rg --no-require-git`` does. No ``git`` process is
ever started: a repository's ``.git/config`` can name commands (``core.fsmonitor``)
that git would run.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ketch_policy_kit.globs import compile_tool_glob, is_magic


@dataclass(frozen=True)
class Entry:
    path: Path
    depth: int
    is_dir: bool
    is_symlink: bool


class WalkUnavailable(RuntimeError):
    pass


def walk_start(root: Path | str) -> tuple[Path, int]:
    """Where the ignore walker can start to reach ``root``, and how many levels below
    that start ``root`` is.

    The walker takes its root as text, so a directory whose path has bytes that are not
    UTF-8 (``dir\\xfe``) cannot be its root; its nearest ancestor that can is, and the
    caller keeps only what lies under ``root`` (ignore files of every level still apply,
    exactly as when walking ``root`` itself)."""
    path = Path(root)
    below = 0
    while True:
        try:
            str(path).encode("utf-8")
            return path, below
        except UnicodeEncodeError:
            path, below = path.parent, below + 1


def under(path: Path, root: Path) -> bool:
    return str(path).startswith(str(root).rstrip("/") + "/")


def walk(root: Path, *, max_depth: int | None = None, gitignore: bool = True) -> Iterator[Entry]:
    """Every entry under ``root`` (not ``root`` itself), ignored ones left out.

    Raises FileNotFoundError when ``root`` does not exist.
    """
    if not root.exists():
        raise FileNotFoundError(str(root))
    try:
        from ignore import WalkBuilder
        from ignore.overrides import OverrideBuilder
    except ImportError:  # pragma: no cover - a declared dependency; keep working without it
        yield from _plain_walk(root, max_depth)
        return
    start, below = walk_start(root)
    builder = WalkBuilder(start).hidden(False).follow_links(False).require_git(False)
    builder = (
        builder.git_ignore(gitignore)
        .git_exclude(gitignore)
        .git_global(gitignore)
        .ignore(gitignore)
        .parents(gitignore)
    )
    builder = builder.overrides(OverrideBuilder(start).add("!.git").build())
    if max_depth is not None:
        builder = builder.max_depth(max_depth + below)
    iterator = iter(builder.build())
    while True:
        try:
            item = next(iterator)
        except StopIteration:
            return
        except Exception:  # noqa: BLE001 - an unreadable subdirectory: skip it, keep walking
            continue
        depth = item.depth() - below
        if depth <= 0:
            continue
        path = item.path()
        if below and not under(path, root):
            continue
        try:
            st = os.lstat(path)
        except OSError:
            continue
        is_link = stat.S_ISLNK(st.st_mode)
        yield Entry(path, depth, stat.S_ISDIR(st.st_mode), is_link)


def _plain_walk(root: Path, max_depth: int | None) -> Iterator[Entry]:
    base_depth = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        current = Path(dirpath)
        depth = len(current.parts) - base_depth + 1
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in dirnames:
            path = current / name
            yield Entry(path, depth, not path.is_symlink(), path.is_symlink())
        for name in sorted(filenames):
            path = current / name
            yield Entry(path, depth, False, path.is_symlink())
        if max_depth is not None and depth >= max_depth:
            dirnames[:] = []


class GlobPattern:
    """A glob (``**``, ``{a,b}``, ``[...]``) matched against paths relative to a base
    (the tools' dialect: :mod:`ketch_policy_kit.globs`)."""

    def __init__(self, pattern: str, *, match_base: bool = False) -> None:
        self.pattern = pattern
        self._matches = compile_tool_glob(pattern, match_base=match_base)

    def match(self, relative: str) -> bool:
        return self._matches(relative)


def check_glob(pattern: str) -> str:
    """Validate a model-supplied glob: relative, no ``..``, no control characters."""
    from ketch_tool_kit.paths import check_path_text

    check_path_text(pattern)
    if pattern.startswith(("/", "~")):
        raise ValueError("the pattern must be relative; put the directory to search in `path`")
    if ".." in pattern.replace("\\", "/").split("/"):
        raise ValueError("the pattern must not contain '..'; put the directory to search in `path`")
    return pattern


def literal_prefix(pattern: str) -> tuple[str, str, int | None]:
    """Split a glob into its literal leading directories, the rest, and a depth limit.

    ``src/app/*.py`` -> (``src/app``, ``*.py``, 1): walk only ``src/app``, one level.
    A ``**`` anywhere means no depth limit.
    """
    parts = pattern.split("/")
    literal: list[str] = []
    for part in parts[:-1]:
        if is_magic(part) or part == "":
            break
        literal.append(part)
    rest = parts[len(literal) :]
    depth = None if any("**" in p for p in rest) else len(rest)
    return "/".join(literal), "/".join(rest), depth
