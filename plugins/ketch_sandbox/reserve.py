"""Reserving protected names that do not exist yet, while commands run.

A read-only bind needs something to mount on, and a name that does not exist cannot
be mounted over; creating it from inside the sandbox would create it on the host
(bubblewrap makes missing mount points in the bound workspace, and leaves them). So
ketch makes each one itself, right before a command starts: an **empty directory**
(git shows no empty directory, so ``git status`` stays clean), or an **empty file**
where the name must be a file to whoever reads it (a file a repository's config
includes: git refuses a directory there; a script a configured hook runs), bound
read-only over itself inside the sandbox. Nothing of that name can then be created,
written, renamed or removed from inside (a mount point is busy).

And ketch removes each one **exactly**: only when no command needs it any more, only
if it is still the same empty entry it made (same device and inode; anything put into
it from outside the sandbox makes it someone else's, and it stays). Missing parents
made for a deep reservation go the same way. Outside a running command nothing of
ketch's is in the workspace: a checkpoint, undo, your editor and ``git status`` see the
workspace as it is. (Several at once are removed side by side: ``rmdir`` waits for the
file system's journal on some systems.)

Who holds what is kept in a ledger beside the session store, locked with ``flock``, so
two ketch processes on one workspace share reservations (one removing a directory the
other still has mounted would detach that mount), and a ketch that was killed leaves
nothing for long: the next one to start a session removes reservations whose holders
are all gone.
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

Key = tuple[Path, str]  # (ledger, path)


def _ledger_path() -> Path:
    from ketch.api import state_dir

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


def _ident(path: Path | str) -> list[int] | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return [info.st_dev, info.st_ino]


@contextlib.contextmanager
def _ledger(path: Path | None = None) -> Iterator[dict[str, Any]]:
    """The ledger, locked for the duration (created on first use; written back only
    when it changed, and never truncated to nothing first: on ext4 that forces a flush)."""
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
            new = json.dumps(entries, sort_keys=True)
            if new != text:
                handle.seek(0)
                handle.write(new)
                handle.truncate(len(new.encode("utf-8")))
                handle.flush()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _remove_if_ours(path: str, entry: dict[str, Any]) -> None:
    """Remove ``path`` if it is still the empty directory (or file) we made."""
    if _ident(path) != entry.get("ident"):
        return  # already gone, or replaced: not ours to remove
    with contextlib.suppress(OSError):  # not empty: someone put something in it, it is theirs
        if entry.get("file"):
            if os.lstat(path).st_size == 0:
                os.unlink(path)
        else:
            os.rmdir(path)


def _release_entries(entries: dict[str, Any], paths: Iterable[str], holder: str) -> None:
    """Drop ``holder`` from ``paths``; remove what nobody alive holds (deepest first,
    those of one depth side by side)."""
    depths: dict[int, list[str]] = {}
    for key in set(paths):
        depths.setdefault(key.count(os.sep), []).append(key)
    for depth in sorted(depths, reverse=True):
        gone: list[tuple[str, dict[str, Any]]] = []
        for key in depths[depth]:
            entry = entries.get(key)
            if entry is None:
                continue
            holders = [h for h in entry.get("holders", []) if h != holder and _alive(h)]
            entry["holders"] = holders
            if not holders:
                gone.append((key, entries.pop(key)))
        if len(gone) > 1:
            try:
                from concurrent.futures import ThreadPoolExecutor

                with ThreadPoolExecutor(max_workers=min(len(gone), 8)) as pool:
                    list(pool.map(lambda item: _remove_if_ours(*item), gone))
                continue
            except RuntimeError:  # at exit no thread (nor its module) starts: one by one
                pass
        for key, entry in gone:
            _remove_if_ours(key, entry)


@dataclass
class Claim:
    """What one command reserved: the placeholders it may bind, and what to give back."""

    ledger: Path | None = None
    paths: list[Path] = field(default_factory=list)  # reserved and present: bind read-only
    # (device, inode) of each placeholder: whatever becomes of it, the command did not make it
    idents: set[tuple[int, int]] = field(default_factory=set)
    _held: list[Key] = field(default_factory=list)
    _released: bool = False

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        _TABLE.drop(self._held)


class _Table:
    """This process's reservations: how many commands hold each, and the shared ledger
    behind them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[Key, int] = {}
        self.made: dict[Key, tuple[list[int], list[Key]]] = {}  # leaf -> (ident, its chain)
        # Paths found real (not a reservation), by identity: the same entry stays real.
        self.real: dict[Key, list[int]] = {}

    def take(self, wanted: Iterable[Path], files: frozenset[Path] = frozenset()) -> Claim:
        # The ledger is fixed for the claim: the state directory is read from the
        # environment, which may differ by the time the command ends.
        ledger = _ledger_path()
        claim = Claim(ledger=ledger)
        with self.lock:
            pending: list[Path] = []
            for path in wanted:
                key = (ledger, str(path))
                known, ident = self.made.get(key), _ident(path)
                if known is not None and ident == known[0]:
                    self._hold_again(claim, path, known)  # ours already: no ledger needed
                elif ident is None or self.real.get(key) != ident:
                    pending.append(path)
            if pending:
                me = _me()
                with _ledger(ledger) as entries:
                    for path in pending:
                        self._hold(entries, claim, ledger, path, me, path in files)
        return claim

    def _hold_again(self, claim: Claim, path: Path, known: tuple[list[int], list[Key]]) -> None:
        ident, chain = known
        for key in chain:
            self.counts[key] = self.counts.get(key, 0) + 1
            claim._held.append(key)
        claim.paths.append(path)
        claim.idents.add((ident[0], ident[1]))

    def _hold(
        self,
        entries: dict[str, Any],
        claim: Claim,
        ledger: Path,
        path: Path,
        me: str,
        file: bool,
    ) -> None:
        """Hold ``path`` (and the parents made for it), making it when absent."""
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
                return
            made.append(step)
            entries[key] = {"ident": _ident(step), "holders": [], "file": leaf_file}
        leaf = entries.get(str(path))
        if leaf is None or _ident(path) != leaf.get("ident"):
            # Exists, and is not a reservation: it is real (the view binds it).
            ident = _ident(path)
            if ident is not None and len(self.real) < 4096:
                self.real[(ledger, str(path))] = ident
            return
        chain: list[Key] = []
        for step in [path, *path.parents]:
            entry = entries.get(str(step))
            if entry is None or _ident(step) != entry.get("ident"):
                continue
            holders = entry.setdefault("holders", [])
            if me not in holders:
                holders.append(me)
            chain.append((ledger, str(step)))
        self.made[(ledger, str(path))] = (leaf["ident"], chain)
        self._hold_again(claim, path, (leaf["ident"], chain))

    def drop(self, held: list[Key]) -> None:
        """A command ended: give back what no command of this process holds any more."""
        if not held:
            return
        with self.lock:
            done: list[Key] = []
            for key in held:
                count = self.counts.get(key, 1) - 1
                if count <= 0:
                    self.counts.pop(key, None)
                    self.made.pop(key, None)
                    done.append(key)
                else:
                    self.counts[key] = count
            self._give_back(done)

    def drop_all(self) -> None:
        """At exit: give back everything this process still holds."""
        with self.lock:
            keys = list(self.counts)
            self.counts.clear()
            self.made.clear()
            self._give_back(keys)

    def _give_back(self, keys: list[Key]) -> None:
        by_ledger: dict[Path, list[str]] = {}
        for ledger, key in keys:
            by_ledger.setdefault(ledger, []).append(key)
        for ledger, paths in by_ledger.items():
            with contextlib.suppress(OSError), _ledger(ledger) as entries:
                _release_entries(entries, paths, _me())


_TABLE = _Table()
atexit.register(_TABLE.drop_all)


def reserve(paths: Iterable[Path], files: Iterable[Path] = ()) -> Claim:
    """Hold each of ``paths`` for one command: absent ones are made -- an empty
    directory, or for those in ``files`` an empty file (a file git includes must be
    one) --, ones this or another ketch reserved are shared, real ones are left alone
    (see the module docstring)."""
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
