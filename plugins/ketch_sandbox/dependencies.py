"""What the workspace's own code depends on outside it, shown read-only in the sandbox.

A project's tests import more than the workspace: an editable install of a library
checked out next to it (``pip install -e ../lib``, ``uv``/``poetry`` path sources), a
Rust crate's ``path`` dependency, a ``file:`` or linked package in ``node_modules``.
Without them the model's ``pytest`` fails in the sandbox (``No module named ...``)
while the person's own run passes. Found here, from the files that say so:

* in each Python environment the sandbox shows (a virtualenv in the workspace, the
  ones on PATH, ``$VIRTUAL_ENV``): ``*.pth`` lines naming a directory (pip's and
  uv's editable installs, ``develop`` path dependencies) and setuptools' editable
  finders (``MAPPING``): exactly what Python imports from, not the whole project (its
  virtualenv, its ``.git``) -- packages mapped side by side share their parent;
* the workspace's ``Cargo.toml`` dependencies with a ``path``;
* symbolic links at the top of the workspace's ``node_modules`` pointing outside it;
* the directories the person lists in ``[sandbox] read_only`` (user config only).

Each is bound read-only and treated like the workspace: secrets masked, sockets
covered, ``.git`` read-only. Never a tree the sandbox keeps out whole (``/``, HOME
itself, an ancestor of the workspace, ``/run``...), nor anything inside a hidden home
secret directory.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ketch_policy_kit.paths import is_within

VENV_NAMES = (".venv", "venv", "env", ".env-py", ".tox")
_MAPPING = re.compile(r"^MAPPING\s*(?::[^=]*)?=\s*(\{.*?\})\s*$", re.MULTILINE | re.DOTALL)
# site-packages directory -> (its mtime, what it names): a venv changes rarely.
_SCANNED: dict[str, tuple[int, tuple[Path, ...]]] = {}


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(path))


def site_packages(prefix: Path) -> list[Path]:
    """The site-packages directories of a Python prefix (a virtualenv or an install)."""
    found = [p for p in prefix.glob("lib/python3*/site-packages") if p.is_dir()]
    found += [p for p in prefix.glob("lib64/python3*/site-packages") if p.is_dir()]
    windows = prefix / "Lib" / "site-packages"
    if windows.is_dir():
        found.append(windows)
    return found


def _pth_dirs(site: Path, entry: os.DirEntry[str]) -> list[Path]:
    out: list[Path] = []
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for line in Path(entry.path).read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if not line or line.startswith(("#", "import ", "import\t")):
                continue
            path = Path(line) if os.path.isabs(line) else site / line
            if path.is_dir():
                out.append(path)
    return out


def _finder_dirs(entry: os.DirEntry[str]) -> list[Path]:
    """setuptools' editable finder: ``MAPPING = {'pkg': '/src/pkg'}``."""
    with contextlib.suppress(OSError, UnicodeDecodeError, ValueError, SyntaxError):
        match = _MAPPING.search(Path(entry.path).read_text(encoding="utf-8"))
        if match is not None:
            mapping = ast.literal_eval(match.group(1))
            if isinstance(mapping, dict):
                paths = [Path(str(v)) for v in mapping.values()]
                found = [p.parent if p.is_file() else p for p in paths if p.exists()]
                parents = [p.parent for p in found]
                # Packages mapped side by side (plugins/a, plugins/b): their parent, once.
                return list(
                    dict.fromkeys(p.parent if parents.count(p.parent) > 1 else p for p in found)
                )
    return []


def _named_by_site(site: Path) -> tuple[Path, ...]:
    try:
        mtime = site.stat().st_mtime_ns
    except OSError:
        return ()
    cached = _SCANNED.get(str(site))
    if cached is not None and cached[0] == mtime:
        return cached[1]
    named: list[Path] = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(site):
            name = entry.name
            if name.endswith(".pth"):
                named += _pth_dirs(site, entry)
            elif name.startswith("__editable__") and name.endswith("_finder.py"):
                named += _finder_dirs(entry)
    result = tuple(dict.fromkeys(_real(p) for p in named))
    _SCANNED[str(site)] = (mtime, result)
    return result


def python_environments(
    workspace: Path, trees: Iterable[Path], environ: Mapping[str, str]
) -> list[Path]:
    """Python prefixes the sandbox shows: virtualenvs in the workspace, $VIRTUAL_ENV
    and $CONDA_PREFIX, and the shown trees that are Python prefixes themselves."""
    found: list[Path] = []
    for name in VENV_NAMES:
        candidate = workspace / name
        if (candidate / "pyvenv.cfg").is_file():
            found.append(candidate)
        elif name == ".tox" and candidate.is_dir():
            found += [p for p in candidate.iterdir() if (p / "pyvenv.cfg").is_file()]
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        value = environ.get(var)
        if value and os.path.isabs(value):
            found.append(Path(value))
    found += [tree for tree in trees if (tree / "pyvenv.cfg").is_file() or site_packages(tree)]
    return list(dict.fromkeys(_real(p) for p in found if p.is_dir()))


def _cargo_paths(workspace: Path) -> list[Path]:
    manifest = workspace / "Cargo.toml"
    try:
        data = tomllib.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    tables: list[Any] = [
        data.get(k) for k in ("dependencies", "dev-dependencies", "build-dependencies")
    ]
    tables.append((data.get("workspace") or {}).get("dependencies"))
    for target in (data.get("target") or {}).values():
        if isinstance(target, dict):
            tables += [target.get(k) for k in ("dependencies", "dev-dependencies")]
    out: list[Path] = []
    for table in tables:
        for spec in (table or {}).values() if isinstance(table, dict) else ():
            if isinstance(spec, dict) and isinstance(spec.get("path"), str):
                out.append(_real(workspace / spec["path"]))
    return out


def _linked_node_modules(workspace: Path) -> list[Path]:
    out: list[Path] = []
    top = workspace / "node_modules"
    with contextlib.suppress(OSError):
        for entry in os.scandir(top):
            scoped = [entry]
            if entry.name.startswith("@") and entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    scoped = list(os.scandir(entry.path))
            out += [_real(e.path) for e in scoped if e.is_symlink()]
    return out


def outside_dependencies(
    workspace: Path,
    trees: Iterable[Path],
    environ: Mapping[str, str],
    also: Iterable[str | os.PathLike[str]] = (),
) -> list[Path]:
    """Directories outside the workspace and the shown trees that its environments,
    manifests and links name (and ``also``: the person's ``[sandbox] read_only``)."""
    trees = list(trees)
    named: list[Path] = [_real(p) for p in also if os.path.isabs(os.fspath(p))]
    for prefix in python_environments(workspace, trees, environ):
        for site in site_packages(prefix):
            named += _named_by_site(site)
    named += _cargo_paths(workspace)
    named += _linked_node_modules(workspace)
    kept: list[Path] = []
    for path in sorted(set(named), key=lambda p: (len(p.parts), str(p))):
        if not path.is_dir() or is_within(path, workspace):
            continue
        if any(is_within(path, t) for t in [*trees, *kept]):
            continue
        kept.append(path)
    return kept


def add_to(
    view: Any,
    workspace: Path,
    bound: list[Path],
    *,
    home: Path,
    environ: Mapping[str, str],
    forbidden: Callable[[Path], bool],
    hidden_homes: Iterable[Path],
    exposed: Callable[[Path], bool] | None,
    hint: Callable[[Path], str] | None,
    scan: bool,
    also: Iterable[str | os.PathLike[str]] = (),
) -> list[Path]:
    """Bind the workspace's outside dependencies read-only into ``view``, treated like
    the workspace (secrets masked, sockets covered, .git read-only); returns them."""
    from ketch_sandbox.trees import Found, index_for

    secret_homes = [_real(p) for p in hidden_homes]
    deps = [
        path
        for path in outside_dependencies(workspace, bound, environ, also)
        if not forbidden(path) and not any(is_within(path, s) for s in secret_homes)
    ]
    view.read_only += deps
    shown = list(bound)  # trees shown already (toolchains): what they hold stays as it was
    for tree in deps:
        found = index_for(tree).refresh() if scan else Found()
        view.protect += [*found.git, *found.ketch]
        view.cover += found.sockets
        for secret in found.secrets:
            if any(is_within(secret, t) for t in shown):
                continue
            if exposed is None or not exposed(secret):
                view.masks.append((secret, hint(secret) if hint else f"read({secret})"))
    return deps
