"""Reserving protected names that do not exist yet, for as long as a command runs.

A read-only bind needs something to mount on, and a name that does not exist cannot
be mounted over; creating it from inside the sandbox would create it on the host
(bubblewrap makes missing mount points in the bound workspace, and leaves them). So
ketch makes each one itself, right before the command starts: an **empty directory**
(git shows no empty directory, so ``git status`` stays clean), or an **empty file**
where the name must be a file to whoever reads it (a file a repository's config
includes: git refuses a directory there; a script a configured hook runs), bound
read-only over itself inside the sandbox. Nothing of that name can then be
created, written, renamed or removed from inside (a mount point is busy).

And ketch removes each one **exactly**: only when no command still needs it, only if
it is still the same empty directory it made (same device and inode; anything put
into it from outside the sandbox makes it someone else's, and it stays). Missing
parents made for a deep reservation go the same way. Who holds what is kept in a
ledger beside the session store, locked with ``flock``, so two ketch processes on one
workspace share reservations (one removing a directory the other still has mounted
would detach that mount), and a ketch that was killed leaves nothing for long: the
next one to start a session removes reservations whose holders are all gone.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LEDGER_NAME = "sandbox-reserved.json"


def _ledger_path() -> Path:
    from ketch.paths import state_dir

    return Path(state_dir()) / LEDGER_NAME


def _me() -> str:
    """This process, as a holder: pid and start time (a reused pid is someone else)."""
    return f"{os.getpid()}:{_start_time(os.getpid())}"


def _start_time(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return ""
    fields = data[data.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else ""


def _alive(holder: str) -> bool:
    pid_text, _, started = holder.partition(":")
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return _start_time(pid) == started


def _ident(path: Path) -> list[int] | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return [info.st_dev, info.st_ino]


@contextlib.contextmanager
def _ledger(path: Path | None = None) -> Iterator[dict[str, Any]]:
    """The ledger, locked for the duration (created on first use)."""
    path = path or _ledger_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    with os.fdopen(fd, "r+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            text = handle.read()
            try:
                data = json.loads(text) if text.strip() else {}
            except ValueError:
                data = {}
            entries: dict[str, Any] = data if isinstance(data, dict) else {}
            yield entries
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps(entries, sort_keys=True))
            handle.flush()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _remove_if_ours(path: str, entry: dict[str, Any]) -> None:
    """Remove ``path`` if it is still the empty directory (or file) we made."""
    if _ident(Path(path)) != entry.get("ident"):
        return  # already gone, or replaced: not ours to remove
    with contextlib.suppress(OSError):  # not empty: someone put something in it, it is theirs
        if entry.get("file"):
            if os.lstat(path).st_size == 0:
                os.unlink(path)
        else:
            os.rmdir(path)


def _release_entries(entries: dict[str, Any], paths: Iterable[str], holder: str) -> None:
    """Drop ``holder`` from ``paths``; remove what nobody alive holds (deepest first)."""
    for key in sorted(set(paths), key=lambda p: -p.count(os.sep)):
        entry = entries.get(key)
        if entry is None:
            continue
        holders = [h for h in entry.get("holders", []) if h != holder and _alive(h)]
        entry["holders"] = holders
        if not holders:
            _remove_if_ours(key, entry)
            entries.pop(key, None)


@dataclass
class Claim:
    """What one command reserved: the placeholders it may bind, and what to give back."""

    ledger: Path | None = None
    paths: list[Path] = field(default_factory=list)  # reserved and present: bind read-only
    # (device, inode) of each placeholder: whatever becomes of it, the command did not make it
    idents: set[tuple[int, int]] = field(default_factory=set)
    _held: list[str] = field(default_factory=list)
    _released: bool = False

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        if self.ledger is not None:
            _TABLE.drop(self.ledger, self._held)


class _Table:
    """This process's holds (a count per path), and the shared ledger behind them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        # (ledger, path) -> how many commands of this process hold it
        self.counts: dict[tuple[Path, str], int] = {}

    def take(self, wanted: Iterable[Path], files: frozenset[Path] = frozenset()) -> Claim:
        # The ledger is fixed for the claim: the state directory is read from the
        # environment, which may differ by the time the command ends.
        ledger = _ledger_path()
        claim = Claim(ledger=ledger)
        me = _me()
        with self.lock, _ledger(ledger) as entries:
            for path in wanted:
                held = self._hold(entries, ledger, path, me, path in files)
                if held is None:
                    continue
                claim.paths.append(path)
                claim._held += held
                claim.idents.update(
                    tuple(entries[k]["ident"]) for k in held if entries[k].get("ident")
                )
        return claim

    def _hold(
        self, entries: dict[str, Any], ledger: Path, path: Path, me: str, file: bool
    ) -> list[str] | None:
        """Hold ``path`` (and the parents made for it); None when it cannot be reserved."""
        made: list[Path] = []
        missing = [p for p in [path, *path.parents] if not os.path.lexists(p)]
        for step in reversed(missing):  # outermost first
            key = str(step)
            entry = entries.get(key)
            if entry is not None and _ident(step) != entry.get("ident"):
                entries.pop(key)  # gone since: start afresh
            leaf_file = file and step == path
            try:
                if leaf_file:
                    os.close(os.open(step, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
                else:
                    os.mkdir(step, 0o755)
            except OSError:
                for undo in reversed(made):
                    with contextlib.suppress(OSError):
                        os.rmdir(undo)
                    entries.pop(str(undo), None)
                return None
            made.append(step)
            entries[key] = {"ident": _ident(step), "holders": [], "file": leaf_file}
        chain = [p for p in [path, *path.parents] if str(p) in entries]
        if str(path) not in entries:
            return None  # exists, and is not a reservation: it is real (the view binds it)
        held: list[str] = []
        for step in chain:
            key = str(step)
            if _ident(step) != entries[key].get("ident"):
                continue
            holders = entries[key].setdefault("holders", [])
            if me not in holders:
                holders.append(me)
            self.counts[(ledger, key)] = self.counts.get((ledger, key), 0) + 1
            held.append(key)
        return held if str(path) in held else None

    def drop(self, ledger: Path, held: list[str]) -> None:
        if not held:
            return
        me = _me()
        with self.lock:
            done = []
            for key in held:
                count = self.counts.get((ledger, key), 1) - 1
                if count <= 0:
                    self.counts.pop((ledger, key), None)
                    done.append(key)
                else:
                    self.counts[(ledger, key)] = count
            if not done:
                return
            with contextlib.suppress(OSError), _ledger(ledger) as entries:
                _release_entries(entries, done, me)

    def drop_all(self) -> None:
        """At exit: give back everything this process still holds."""
        with self.lock:
            held: dict[Path, list[str]] = {}
            for ledger, key in self.counts:
                held.setdefault(ledger, []).append(key)
            self.counts.clear()
        for ledger, keys in held.items():
            with contextlib.suppress(OSError), _ledger(ledger) as entries:
                _release_entries(entries, keys, _me())


_TABLE = _Table()


def reserve(paths: Iterable[Path], files: Iterable[Path] = ()) -> Claim:
    """Make each absent path an empty directory -- or, for those in ``files``, an empty
    file (a file git includes must be one) -- for one command (see the module docstring)."""
    wanted = list(paths)
    if not wanted:
        return Claim()
    try:
        return _TABLE.take(wanted, frozenset(files))
    except OSError:
        return Claim()  # no ledger (read-only state dir): reserve nothing, detection remains


def placeholders(ledger: Path | None = None) -> dict[str, list[int]]:
    """Every reservation alive now: path -> its (device, inode)."""
    try:
        with _ledger(ledger) as entries:
            return {k: v.get("ident") for k, v in entries.items() if v.get("holders")}
    except OSError:
        return {}


def sweep() -> None:
    """Remove the reservations of processes that are gone (a ketch that was killed)."""
    with contextlib.suppress(OSError), _ledger() as entries:
        _release_entries(entries, list(entries), holder="")


atexit.register(_TABLE.drop_all)
