"""What a recursive reader would read, by that program's own rules.

``grep -r``, ``rg``, ``git grep`` and ``diff -r`` pick their files by walking a tree
under rules of their own: rg skips hidden and ignored files unless told otherwise, but
a glob override (``rg -g .env``) or a whitelist entry in any ignore file (``!.env`` in
a ``.ignore`` written earlier) brings them back; ``git grep`` reads tracked files, or
untracked and ignored ones with ``--untracked --no-exclude-standard``, or every file
with ``--no-index``; ``grep -R`` and ``rg -L`` follow symlinked directories out of the
workspace. A recursive read is proven only after enumerating that set (:func:`reach`)
and finding in it no secret (by name or content, :mod:`ketch_secret_kit`) and nothing
outside the workspace.

The walk of each program is its own:

* rg -- ripgrep's own ``ignore`` crate (through ``ignore-python``): hidden files,
  ``.gitignore`` (inside a git repository, as ``--no-require-git`` changes), ``.ignore``
  and ``.rgignore`` in the tree and its parents, ``.git/info/exclude``, the global git
  excludes, ``--ignore-file``, ``-g``/``--iglob`` overrides (which beat every ignore
  rule), ``--max-depth``, ``-L``;
* git grep -- the files in the index; with ``--untracked`` the untracked files git's
  ignore rules leave (read by the same crate's gitignore matcher; git itself is never
  run: a repository's config can name programs), every untracked file with
  ``--no-exclude-standard``, every file under the directory with ``--no-index``;
* grep -r / -R, diff -r -- every entry, hidden ones included; ``-r`` follows symlinks
  named on the command line only, ``-R`` (and diff, which stats what it compares) every
  one; grep's ``--include``/``--exclude``/``--exclude-dir`` narrow the set only when they
  are plain ``*``/``?`` patterns (anything else: the wider set is checked).

Narrowing that cannot be read exactly (rg's ``--type``, git pathspecs) is not applied:
the set checked is then larger than what the program reads, never smaller. The walk is
capped (:data:`MAX_ENTRIES`); past the cap the command asks.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

MAX_ENTRIES = 20_000
# Files one proof may read to classify (the rest of the cache fills in the background,
# see ketch_secret_kit.files.warm); past it the command asks.
MAX_COLD = 2_000
_SIMPLE_PATTERN = re.compile(r"[^\[\]\\{}]*")


@dataclass(frozen=True)
class Walk:
    """How one program walks a tree (see the module docstring)."""

    program: str  # rg | grep | diff | git-grep | list
    hidden: bool = True  # reads hidden entries
    follow: bool = False  # follows symlinks met in the tree
    # rg: which ignore files apply ("vcs", "dot", "parents", "global", "exclude")
    ignores: frozenset[str] = frozenset()
    require_git: bool = True
    globs: tuple[str, ...] = ()  # rg overrides (already case-folded for --iglob)
    ignore_files: tuple[str, ...] = ()  # rg --ignore-file
    max_depth: int | None = None
    include: tuple[str, ...] = ()  # grep --include (plain patterns only)
    exclude: tuple[str, ...] = ()  # grep --exclude, diff -x
    exclude_dir: tuple[str, ...] = ()  # grep --exclude-dir
    git: str = (
        ""  # git grep: "tracked" | "untracked" | "all-untracked" | "no-index" | "no-index-standard"
    )
    content: bool = True  # reads what it finds (False: names only)
    notes: tuple[str, ...] = field(default=())


RG_DEFAULT = Walk(
    "rg", hidden=False, ignores=frozenset({"vcs", "dot", "parents", "global", "exclude"})
)
EVERYTHING = Walk("grep")


@dataclass(frozen=True)
class Found:
    """Why a recursive read is not proven: ``kind`` is secret | outside | too-many."""

    kind: str
    path: str = ""
    why: str = ""

    def describe(self, start: str) -> str:
        if self.kind == "secret":
            return f"reads everything under {start}, which holds a secret ({self.path}: {self.why})"
        if self.kind == "outside":
            return (
                f"reads everything under {start}, which reaches {self.path}, outside the workspace"
            )
        if self.why:
            return f"reads everything under {start}, which ketch cannot check ({self.why})"
        return f"reads everything under {start}, more files than ketch checks ({MAX_ENTRIES:,})"


# --- reading a walk off the parsed options ------------------------------------------------------


def _case_folded(glob: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in glob)


def _plain(patterns: list[str]) -> tuple[str, ...] | None:
    """Patterns grep and fnmatch read the same way (``*``, ``?``, literals), or None."""
    if all(_SIMPLE_PATTERN.fullmatch(p) for p in patterns):
        return tuple(patterns)
    return None


def rg_walk(options: list[tuple[str, str | None]]) -> Walk:
    """rg's walk from its options, in order (``(name, value)``: the long name when there is one)."""
    hidden, follow, require_git = False, False, True
    ignores = {"vcs", "dot", "parents", "global", "exclude"}
    globs: list[str] = []
    ignore_files: list[str] = []
    max_depth: int | None = None
    fold = False
    unrestricted = 0
    for name, value in options:
        if name == "--unrestricted":
            unrestricted += 1
            if unrestricted == 1:
                ignores.clear()
            else:
                hidden = True
        elif name == "--hidden":
            hidden = True
        elif name == "--no-hidden":
            hidden = False
        elif name == "--follow":
            follow = True
        elif name == "--no-follow":
            follow = False
        elif name == "--no-ignore":
            ignores.clear()
        elif name == "--ignore":
            ignores = {"vcs", "dot", "parents", "global", "exclude"}
        elif name in (
            "--no-ignore-vcs",
            "--no-ignore-dot",
            "--no-ignore-parent",
            "--no-ignore-global",
            "--no-ignore-exclude",
        ):
            ignores.discard(
                {
                    "vcs": "vcs",
                    "dot": "dot",
                    "parent": "parents",
                    "global": "global",
                    "exclude": "exclude",
                }[name.rsplit("-", 1)[1]]
            )
        elif name == "--no-ignore-files":
            ignore_files.clear()
        elif name == "--no-require-git":
            require_git = False
        elif name == "--require-git":
            require_git = True
        elif name in ("--glob", "--iglob") and value is not None:
            globs.append(_case_folded(value) if name == "--iglob" else value)
        elif name == "--glob-case-insensitive":
            fold = True
        elif name == "--ignore-file" and value is not None:
            ignore_files.append(value)
        elif name == "--max-depth" and value is not None and value.isdigit():
            max_depth = int(value)
    if fold:
        globs = [_case_folded(g) for g in globs]
    return Walk("rg", hidden=hidden, follow=follow, ignores=frozenset(ignores), require_git=require_git,
                globs=tuple(globs), ignore_files=tuple(ignore_files), max_depth=max_depth)  # fmt: skip


def grep_walk(options: list[tuple[str, str | None]]) -> Walk:
    follow = any(name == "--dereference-recursive" for name, _ in options)
    include = [v for n, v in options if n == "--include" and v is not None]
    exclude = [v for n, v in options if n == "--exclude" and v is not None]
    exclude_dir = [v for n, v in options if n == "--exclude-dir" and v is not None]
    return Walk(
        "grep",
        follow=follow,
        include=_plain(include) or (),
        exclude=_plain(exclude) or (),
        exclude_dir=_plain(exclude_dir) or (),
    )


def diff_walk(options: list[tuple[str, str | None]]) -> Walk:
    follow = not any(name == "--no-dereference" for name, _ in options)
    exclude = [v for n, v in options if n == "--exclude" and v is not None]
    return Walk("diff", follow=follow, exclude=_plain(exclude) or ())


def git_grep_walk(options: list[tuple[str, str | None]]) -> Walk:
    names = {name for name, _ in options}
    if "--no-index" in names:
        return Walk(
            "git-grep", git="no-index-standard" if "--exclude-standard" in names else "no-index"
        )
    if "--untracked" in names:
        return Walk(
            "git-grep", git="all-untracked" if "--no-exclude-standard" in names else "untracked"
        )
    return Walk("git-grep", git="tracked")


# --- walking ---------------------------------------------------------------------------------------


def _fnmatch_any(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _plain_walk(start: str, walk: Walk, *, skip_git: bool) -> Iterator[tuple[str, bool]]:
    """(path, is a symlink met in the tree) for every file grep/diff would open."""
    stack = [start]
    seen: set[tuple[int, int]] = set()
    while stack:
        current = stack.pop()
        try:
            info = os.stat(current)
        except OSError:
            continue
        identity = (info.st_dev, info.st_ino)
        if identity in seen:
            continue  # a symlink loop
        seen.add(identity)
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            if skip_git and entry.name == ".git":
                continue
            link = entry.is_symlink()
            if link and not walk.follow:
                continue  # grep -r, git: a symlink in the tree is not followed
            try:
                directory = entry.is_dir(follow_symlinks=True)
            except OSError:
                continue
            if directory:
                if walk.exclude_dir and _fnmatch_any(entry.name, walk.exclude_dir):
                    continue
                if link:
                    yield entry.path, True  # where it leads is checked
                stack.append(entry.path)
                continue
            if walk.include and not _fnmatch_any(entry.name, walk.include):
                continue
            if walk.exclude and _fnmatch_any(entry.name, walk.exclude):
                continue
            yield entry.path, link


def _rg_walk(start: str, walk: Walk, cwd: str, root: str) -> Iterator[tuple[str, bool]]:
    from ignore import WalkBuilder
    from ignore.overrides import OverrideBuilder

    ignores = walk.ignores
    builder = (
        WalkBuilder(Path(start))
        .hidden(not walk.hidden)
        .follow_links(walk.follow)
        .require_git(walk.require_git)
        .git_ignore("vcs" in ignores)
        .git_exclude("vcs" in ignores and "exclude" in ignores)
        .git_global("vcs" in ignores and "global" in ignores)
        .ignore("dot" in ignores)
        .parents("parents" in ignores)
    )
    if "dot" in ignores:
        builder = builder.add_custom_ignore_filename(".rgignore")
    from ketch_secret_kit import looks_secret

    for path in walk.ignore_files:
        # rg warns about a missing one and goes on. One outside the workspace, or a
        # secret, is not opened here: the command names it, so its proof asks anyway.
        ignore_file = os.path.realpath(os.path.join(cwd, path))
        inside = ignore_file.startswith(root.rstrip(os.sep) + os.sep)
        if inside and os.path.isfile(ignore_file) and not looks_secret(ignore_file):
            builder.add_ignore(Path(ignore_file))
    if walk.globs:
        overrides = OverrideBuilder(Path(cwd))
        for glob in walk.globs:
            overrides = overrides.add(glob)
        builder = builder.overrides(overrides.build())
    if walk.max_depth is not None:
        builder = builder.max_depth(walk.max_depth)
    for item in builder.build():
        path = str(item.path())
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode):
            if walk.follow:  # without -L, rg neither follows nor reads a symlink it meets
                yield path, True
        elif stat.S_ISREG(info.st_mode):
            yield path, False


def _gitignore_walk(start: str, *, standard: bool) -> Iterator[tuple[str, bool]]:
    """Untracked files as git lists them: gitignore rules (``standard``) or none; hidden
    files included, symlinks not followed, ``.git`` skipped."""
    if not standard:
        yield from _plain_walk(start, Walk("git-grep"), skip_git=True)
        return
    from ignore import WalkBuilder
    from ignore.overrides import OverrideBuilder

    builder = (
        WalkBuilder(Path(start))
        .hidden(False)
        .follow_links(False)
        .require_git(False)
        .git_ignore(True)
        .git_exclude(True)
        .git_global(True)
        .ignore(False)
        .parents(True)
        .overrides(OverrideBuilder(Path(start)).add("!.git").build())
    )
    for item in builder.build():
        path = str(item.path())
        try:
            if stat.S_ISREG(os.lstat(path).st_mode):
                yield path, False
        except OSError:
            continue


def tracked_files(repository: str) -> list[str] | None:
    """The paths in the repository's index (None: no index, or too many to list)."""
    from ketch_shell_kit.grammar.git import index_names

    names = index_names(repository)
    if names is None:
        return None
    return [os.path.join(repository, name) for name in names]


def _git_walk(start: str, walk: Walk, repository: str) -> Iterator[tuple[str, bool]] | None:
    if walk.git in ("no-index", "no-index-standard"):
        return _gitignore_walk(start, standard=walk.git == "no-index-standard")
    tracked = tracked_files(repository)
    if tracked is None:
        return None

    def files() -> Iterator[tuple[str, bool]]:
        for path in tracked:
            yield path, False
        if walk.git in ("untracked", "all-untracked"):
            yield from _gitignore_walk(start, standard=walk.git == "untracked")

    return files()


def entries_of(
    start: str, walk: Walk, *, cwd: str, repository: str, workspace: str | None = None
) -> Iterator[tuple[str, bool]] | None:
    """Every file (and followed symlink) ``walk`` reads from ``start``, as (path, is a
    symlink met in the tree); None when git's index cannot be read. Ignore files named
    on the command line are read only inside ``workspace`` (default: ``repository``)."""
    if walk.program == "rg":
        return _rg_walk(start, walk, cwd, workspace or repository)
    if walk.program == "git-grep":
        return _git_walk(start, walk, repository)
    return _plain_walk(start, walk, skip_git=False)


def reach(
    start: str,
    walk: Walk,
    *,
    workspace: Path,
    cwd: str,
    masked: bool = False,
    limit: int = MAX_ENTRIES,
    content_within: Path | None = None,
) -> Found | None:
    """The first reason ``walk`` from ``start`` (resolved, inside the workspace) is not
    proven, or None. ``masked``: secrets read as empty (a working sandbox masks them), so
    only leaving the workspace counts -- and a walk that follows no symlink cannot.
    ``content_within``: where files are classified by content too (default: the
    workspace); elsewhere by name."""
    root = os.path.realpath(workspace)
    scope = os.path.realpath(content_within if content_within is not None else workspace)
    if masked and not walk.follow:
        return None
    try:
        return _first(start, walk, root, cwd, scope, masked=masked, limit=limit)
    except Exception as exc:  # noqa: BLE001 - a walk that fails proves nothing: ask
        return Found("too-many", why=f"the walk failed: {exc}")


def _first(
    start: str, walk: Walk, root: str, cwd: str, scope: str, *, masked: bool, limit: int
) -> Found | None:
    from ketch_secret_kit import looks_secret
    from ketch_secret_kit.files import cached_content_secret, content_secret

    inside = root.rstrip(os.sep) + os.sep
    scoped = scope.rstrip(os.sep) + os.sep
    entries = entries_of(start, walk, cwd=cwd, repository=root, workspace=scope)
    if entries is None:
        return Found("too-many", why="the repository's index cannot be read")
    count = cold = 0
    for path, link in entries:
        count += 1
        if count > limit:
            return Found("too-many")
        real = os.path.realpath(path) if link or walk.follow else path
        if real != root and not real.startswith(inside):
            return Found("outside", real)
        if masked or not walk.content or (link and os.path.isdir(real)):
            continue
        if looks_secret(path) or (real != path and looks_secret(real)):
            return Found("secret", os.path.relpath(path, root), "its name looks like a secret")
        if real != scope and not real.startswith(scoped):
            continue  # outside the workspace: known by name only
        why = cached_content_secret(real)
        if why is None:
            cold += 1
            if cold > MAX_COLD:
                return Found("too-many", why="not yet classified")
            why = content_secret(real)
        if why:
            return Found("secret", os.path.relpath(path, root), why)
    return None
