"""Where ketch keeps its worktrees, what it calls them, and the record of each.

A repository's worktrees live outside it, under ketch's state directory::

    $XDG_STATE_HOME/ketch/worktrees/<repository>-<digest>/<NAME>/       the checkout
    $XDG_STATE_HOME/ketch/worktrees/<repository>-<digest>/<NAME>.json  its record

``<repository>`` is the main work tree's folder name and ``<digest>`` the first 12
hex digits of SHA-256 over its common git directory's real path (two clones named
alike do not share a folder). Outside the repository, because a worktree inside it
would be scanned by the parent's checkpoints, walks and sandbox view, and ``.ketch``
or ``.claude`` (where Claude Code keeps them) are protected paths in ketch. The record
holds no content: the name, the branch, the commit it started from, when, and where
the repository is (which git itself writes into the worktree's ``.git`` file too).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

BRANCH_PREFIX = "ketch/"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class WorktreeError(Exception):
    """One line for the person: what went wrong and what to do."""


def check_name(name: str) -> str:
    """``name`` when it can be a folder and a branch name; else a WorktreeError."""
    if not _NAME.fullmatch(name) or ".." in name or name.endswith((".lock", ".json", ".")):
        raise WorktreeError(
            f"{name!r} cannot name a worktree: use letters, digits, '-', '_' and '.' "
            "(at most 64, starting with a letter or digit)"
        )
    return name


def worktrees_root() -> Path:
    from ketch.api import state_dir

    return state_dir() / "worktrees"


def repository_folder(common_dir: Path, main_tree: Path) -> Path:
    """The folder that holds one repository's worktrees and records."""
    digest = hashlib.sha256(os.fsencode(os.path.realpath(common_dir))).hexdigest()[:12]
    label = re.sub(r"[^A-Za-z0-9_.-]", "_", main_tree.name)[:40] or "repository"
    return worktrees_root() / f"{label}-{digest}"


@dataclass(frozen=True)
class Record:
    """One worktree ketch made."""

    name: str
    branch: str
    base: str  # the commit it started from
    created: str  # UTC, ISO 8601
    repository: str  # the main work tree
    path: str  # the worktree's folder

    @property
    def folder(self) -> Path:
        return Path(self.path)


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def record_file(folder: Path, name: str) -> Path:
    return folder / f"{name}.json"


def write_record(folder: Path, record: Record) -> None:
    """Atomically (a temporary file, then a rename); the folder is the user's only."""
    folder.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(folder.parent, 0o700)
        os.chmod(folder, 0o700)
    handle, temp = tempfile.mkstemp(prefix=".record-", suffix=".json", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(asdict(record), out, indent=1, sort_keys=True)
            out.write("\n")
        os.replace(temp, record_file(folder, record.name))
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def read_record(folder: Path, name: str) -> Record | None:
    """The record of ``name`` (None when there is none, or it cannot be used)."""
    try:
        data = json.loads(record_file(folder, name).read_text(encoding="utf-8"))
        return Record(**{k: str(data[k]) for k in Record.__dataclass_fields__})
    except (OSError, ValueError, KeyError, TypeError):
        return None


def records(folder: Path) -> list[Record]:
    """Every record of one repository's folder, by name."""
    try:
        names = sorted(p.stem for p in folder.glob("*.json"))
    except OSError:
        return []
    return [r for r in (read_record(folder, n) for n in names) if r is not None]
