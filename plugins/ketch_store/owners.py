"""Which process owns an in-flight operation, and whether it is still alive.

Each process that writes to the store holds an exclusive ``flock`` on a lock file of
its own (``owners/<id>.lock`` beside the database) for as long as the store is open.
The kernel drops a process's locks when it dies, however it dies (SIGKILL included),
so recovery can tell an operation that is still running in another ketch from one
whose process is gone: only the latter becomes ``unknown_outcome``.

Where ``fcntl`` is missing (Windows) the owner id carries the pid and liveness falls
back to asking whether that pid exists.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]


class OwnerLock:
    """This process's claim on the operations it dispatches."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.id = f"{os.getpid()}-{secrets.token_hex(8)}"
        self.path = directory / f"{self.id}.lock"
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        if fcntl is not None:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(self._fd)  # closing drops the flock
        self._fd = None


def owner_alive(directory: Path, owner: str) -> bool:
    """True while the process that took ``owner``'s lock is still running."""
    if not owner or "/" in owner or owner.startswith("."):
        return False
    path = directory / f"{owner}.lock"
    if fcntl is None:  # pragma: no cover - Windows
        return _pid_alive(owner)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def forget(directory: Path, owner: str) -> None:
    """Remove a dead owner's lock file (its operations have been resolved)."""
    if owner and "/" not in owner:
        with contextlib.suppress(OSError):
            (directory / f"{owner}.lock").unlink()


def _pid_alive(owner: str) -> bool:  # pragma: no cover - Windows
    try:
        pid = int(owner.split("-", 1)[0])
        os.kill(pid, 0)
    except (ValueError, OSError):
        return False
    return True


def shared(path: Path, wait: float, on_wait: Callable[[], None] | None = None) -> int:
    """A shared lock on ``path`` for as long as the returned descriptor stays open (every
    open store holds one); waits up to ``wait`` seconds while someone holds it
    exclusively, then raises ``TimeoutError``."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    if fcntl is None:  # pragma: no cover
        return fd
    deadline, told = time.monotonic() + wait, False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise TimeoutError(str(path)) from None
            if not told and on_wait is not None:
                on_wait()
                told = True
            time.sleep(0.05)


def make_exclusive(fd: int) -> bool:
    """Turn a shared lock into an exclusive one, if no one else holds it (else keep it shared)."""
    if fcntl is None:  # pragma: no cover
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fcntl.flock(fd, fcntl.LOCK_SH)  # a failed conversion may have dropped it: take it back
        return False
    return True


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Serialize opening the store (creating it and minting its key) across processes."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
