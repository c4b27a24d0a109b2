"""Finding git and the repository a directory belongs to, without running anything.

``git_executable`` takes git from ``PATH`` but never from a relative entry (``.``,
``node_modules/.bin``) nor from inside the workspace: a repository must not be able to
plant the ``git`` ketch runs (``executable`` does the same for any program ketch
starts for itself, such as a language server). ``find_repository`` walks up from a directory the way
git's discovery does (a ``.git`` directory, or a ``.git`` file naming one, and a
worktree's ``commondir``), so callers can tell which files hold its configuration.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


def executable(name: str, environ: Mapping[str, str], avoid: Path | None = None) -> str | None:
    """The absolute path of program ``name`` on ``PATH``, skipping relative entries and
    any directory inside ``avoid`` (the workspace); None when there is none."""
    root = os.path.realpath(avoid) if avoid is not None else None
    for entry in (environ.get("PATH") or os.defpath).split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry)
        if root is not None and (real == root or real.startswith(root.rstrip(os.sep) + os.sep)):
            continue
        found = shutil.which(name, path=entry)
        if found:
            return found
    return None


def git_executable(environ: Mapping[str, str], avoid: Path | None = None) -> str | None:
    """The absolute path of ``git`` on ``PATH``, skipping relative entries and any
    directory inside ``avoid`` (the workspace); None when there is none."""
    return executable("git", environ, avoid)


@dataclass(frozen=True)
class Repository:
    """Where a repository keeps what git reads: ``git_dir`` (this worktree's), the
    ``common_dir`` shared by every worktree, and the work tree (None when bare)."""

    git_dir: Path
    common_dir: Path
    work_tree: Path | None

    def config_files(self) -> tuple[Path, ...]:
        """The repository's own config files (``config``, ``config.worktree``)."""
        return (self.common_dir / "config", self.git_dir / "config.worktree")

    def hooks_dir(self) -> Path:
        return self.common_dir / "hooks"


def _gitdir_from_file(path: Path) -> Path | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    first = text.splitlines()[0] if text else ""
    if not first.startswith("gitdir:"):
        return None
    target = Path(first[len("gitdir:") :].strip())
    return target if target.is_absolute() else (path.parent / target)


def _is_git_dir(path: Path) -> bool:
    return (path / "HEAD").is_file() and (
        (path / "objects").is_dir() or (path / "commondir").is_file()
    )


def _common(git_dir: Path) -> Path:
    try:
        text = (git_dir / "commondir").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return git_dir
    common = Path(text)
    return common if common.is_absolute() else (git_dir / common)


def find_repository(start: Path) -> Repository | None:
    """The repository git would use in ``start`` (None outside any)."""
    current = Path(os.path.abspath(start))
    while True:
        dot = current / ".git"
        git_dir: Path | None = None
        if dot.is_dir() and _is_git_dir(dot):
            git_dir = dot
        elif dot.is_file():
            git_dir = _gitdir_from_file(dot)
        if git_dir is not None:
            git_dir = Path(os.path.realpath(git_dir))
            return Repository(git_dir, Path(os.path.realpath(_common(git_dir))), current)
        if _is_git_dir(current) and current.name != ".git":
            return Repository(current, Path(os.path.realpath(_common(current))), None)
        if current.parent == current:
            return None
        current = current.parent
