"""What a sandboxed command planted, found once it has ended, and moved out of the way.

Read-only binds and reservations (``view.guard``, ``reserve.py``) stop a command from
creating or changing the protected paths ketch knows of when it starts. What no mount
can stop is a protected *name* made somewhere new: ``git init`` in any directory (a
``.git`` there), ``mkdir sub/.vscode``, a ``.claude`` three levels down -- a bind mount
needs a name that exists, and Landlock cannot deny by name. So ketch looks once the
command and everything it started have ended (no process of it is left to race with):
every entry of a protected name in the workspace (kept current by the workspace index,
:mod:`ketch_sandbox.trees`) whose identity -- device and inode, and the target of a
link -- was not there when the command started is **moved out of the workspace** into
a quarantine directory beside the session store, and the command's result says so, one
line each: where it was, what it is, why it matters, and where it went. Nothing
planted stays where the person's next ``git status``, editor or session would run it.

Not counted: ketch's own reservations, and paths a tool call the person authorized
wrote meanwhile (:func:`accept`), e.g. ``write_file .vscode/settings.json`` approved
while a background job ran. A protected name the *person* makes in the workspace
while a command runs cannot be told from the command's, and is moved too (the line
says where to, so it can be moved back).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ketch_policy_kit.paths import is_within
from ketch_policy_kit.protected import GIT_WHY, protected_name
from ketch_sandbox.trees import Found

Identity = tuple[int, int, str]  # (st_dev, st_ino, link target or "")


def identity(path: Path) -> Identity | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    target = ""
    if stat.S_ISLNK(info.st_mode):
        with contextlib.suppress(OSError):
            target = os.readlink(path)
    return (info.st_dev, info.st_ino, target)


def protected_entries(found: Found) -> dict[Path, Identity]:
    """Every entry of a protected name the index knows, with its identity now."""
    entries: dict[Path, Identity] = {}
    for path in [*found.git, *found.ketch, *found.protected, *found.links]:
        ident = identity(path)
        if ident is not None:
            entries[path] = ident
    return entries


@dataclass
class Accepted:
    """Paths tool calls the person authorized wrote, per workspace, with when."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    paths: dict[Path, float] = field(default_factory=dict)

    def add(self, path: Path) -> None:
        with self.lock:
            self.paths[path] = time.monotonic()

    def since(self, started: float) -> list[Path]:
        with self.lock:
            return [p for p, when in self.paths.items() if when >= started]


_ACCEPTED: dict[str, Accepted] = {}


def accepted(workspace: Path) -> Accepted:
    return _ACCEPTED.setdefault(os.fspath(workspace), Accepted())


def accept(workspace: Path, path: Path) -> None:
    """A tool call the person authorized is about to write ``path``: not a plant."""
    accepted(workspace).add(path)


def quarantine_dir() -> Path:
    from ketch.api import state_dir

    return Path(state_dir()) / "quarantine"


def _move(source: Path, destination: Path) -> bool:
    destination.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(source, destination)
        return True
    except OSError:
        pass
    try:  # another file system: copy (links as links), then remove
        if source.is_dir() and not source.is_symlink():
            shutil.copytree(source, destination, symlinks=True)
            shutil.rmtree(source)
        else:
            shutil.copy2(source, destination, follow_symlinks=False)
            source.unlink()
        return True
    except OSError:
        return False


def _remove(path: Path) -> bool:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
        return True
    except OSError:
        return not os.path.lexists(path)


def _why(path: Path, guarded: dict[Path, str]) -> str:
    return guarded.get(path) or protected_name(path.name) or GIT_WHY


@dataclass
class Watch:
    """One command's protected entries at its start; :meth:`finish` finds what is new."""

    workspace: Path
    before: dict[Path, Identity]
    guarded: dict[Path, str]
    refresh: Callable[[], Found]
    started: float = field(default_factory=time.monotonic)
    # Fixed at the start: the state directory comes from the environment of the moment.
    quarantine: Path = field(default_factory=lambda: quarantine_dir())
    _done: bool = False

    @classmethod
    def start(
        cls, workspace: Path, found: Found, guarded: dict[Path, str], refresh: Callable[[], Found]
    ) -> Watch:
        before = protected_entries(found)
        for path in guarded:
            ident = identity(path)
            if ident is not None:
                before.setdefault(path, ident)
        return cls(workspace, before, dict(guarded), refresh)

    def finish(
        self, reserved: set[tuple[int, int]] | None = None, ledger: Path | None = None
    ) -> list[str]:
        """Once the command has ended: move what it planted to quarantine; one line each.
        ``reserved``: (device, inode) of this command's own reservations (not planted);
        ``ledger``: where every ketch's reservations are listed (reserve.py)."""
        if self._done:
            return []
        self._done = True
        from ketch_sandbox.reserve import placeholders

        try:
            after = protected_entries(self.refresh())
        except Exception:  # noqa: BLE001 - the index failed: walk for protected names instead
            after = _walk(self.workspace)
        # Known configured paths (a hooks directory, a hook's script) that were absent.
        for path in self.guarded:
            if path not in after:
                ident = identity(path)
                if ident is not None:
                    after[path] = ident
        known = set(self.before.values())
        ours = {tuple(v) for v in placeholders(ledger).values() if v} | (reserved or set())
        fine = self.accepted()
        new = [
            path
            for path, ident in after.items()
            if ident not in known
            and (ident[0], ident[1]) not in ours
            and not any(path == a or is_within(a, path) or is_within(path, a) for a in fine)
        ]
        new.sort(key=lambda p: (len(p.parts), str(p)))
        top: list[Path] = []
        for path in new:
            if not any(is_within(path, t) for t in top):
                top.append(path)
        if not top:
            return []
        stamp = time.strftime("%Y%m%d-%H%M%S")
        base = self.quarantine / f"{stamp}-{os.getpid()}-{time.monotonic_ns() % 10**9}"
        return [self._quarantine(path, base) for path in top]

    def accepted(self) -> list[Path]:
        return accepted(self.workspace).since(self.started)

    def _quarantine(self, path: Path, base: Path) -> str:
        rel = path.relative_to(self.workspace)
        what = _why(path, self.guarded)
        where = base / rel
        if _move(path, where):
            return (
                f"[sandbox] the command created {rel} ({what}); it was moved out of the "
                f"workspace to {where} -- move it back only if you meant it to run"
            )
        if _remove(path):
            return f"[sandbox] the command created {rel} ({what}); it could not be moved, so it was deleted"
        return (
            f"[sandbox] the command created {rel} ({what}) and it could be neither moved nor "
            f"deleted: remove it yourself before you use git or open this folder in an editor"
        )


def _walk(workspace: Path) -> dict[Path, Identity]:
    """Every entry of a protected name under ``workspace`` (not inside .git), by walking."""
    entries: dict[Path, Identity] = {}
    for dirpath, dirnames, filenames in os.walk(workspace):
        for name in [*dirnames, *filenames]:
            if protected_name(name) is not None:
                path = Path(dirpath) / name
                ident = identity(path)
                if ident is not None:
                    entries[path] = ident
        dirnames[:] = [d for d in dirnames if d != ".git"]
    return entries
