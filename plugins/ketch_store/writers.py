"""One writer per session: an exclusive ``flock`` on ``writers/<session id>.lock``.

A process that writes a session holds its lock from the moment it creates or resumes it
until the session ends (or the process dies: the kernel drops the lock however it dies).
A second ``--continue``/``--resume`` of the same session waits for the lock, saying so,
for ``[storage] writer_wait`` seconds (default 60); if the first still has it then, the
second forks a new session from the same history and says so. Either way the two never
write one transcript at the same time.

The lock file holds the pid of its holder, for the notice. Files are left in place when
released (unlinking a lock file others may be waiting on is a race), and removed with
their session. The lock is the process's: two stores opened in one process (tests, a
shell that resumes the session it is in) share it rather than lock each other out.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: one writer is not enforced there
    fcntl = None  # type: ignore[assignment]

POLL_SECONDS = 0.05
_SAFE = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


# Lock files this process holds: path -> [fd, how many Writers hold it].
_PROCESS: dict[Path, list[int]] = {}


class Writers:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.held: dict[str, Path] = {}

    def _path(self, session_id: str) -> Path:
        if not _SAFE.match(session_id) or session_id.startswith("."):
            raise ValueError(f"not a session id: {session_id!r}")
        return self.directory / f"{session_id}.lock"

    def holds(self, session_id: str) -> bool:
        return session_id in self.held

    def try_claim(self, session_id: str) -> bool:
        """Take the session's lock now if it is free (True also when we hold it already)."""
        if session_id in self.held:
            return True
        path = self._path(session_id)
        shared = _PROCESS.get(path)
        if shared is not None:
            shared[1] += 1
            self.held[session_id] = path
            return True
        if fcntl is None:  # pragma: no cover
            _PROCESS[path] = [-1, 1]
            self.held[session_id] = path
            return True
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        _PROCESS[path] = [fd, 1]
        self.held[session_id] = path
        return True

    def claim(
        self, session_id: str, wait: float, on_wait: Callable[[str], None] | None = None
    ) -> bool:
        """Take it, waiting up to ``wait`` seconds; ``on_wait(holder)`` once if busy."""
        from ketch_store_kit.journal import claim_waiting

        return claim_waiting(self, session_id, wait, on_wait, POLL_SECONDS)

    def holder(self, session_id: str) -> str:
        """Who holds the lock, as a phrase for a notice ("pid 1234")."""
        with contextlib.suppress(OSError, ValueError):
            text = self._path(session_id).read_text(encoding="ascii").strip()
            if text.isdigit():
                return f"pid {text}"
        return "another process"

    def release(self, session_id: str) -> None:
        path = self.held.pop(session_id, None)
        shared = _PROCESS.get(path) if path is not None else None
        if shared is None or path is None:
            return
        shared[1] -= 1
        if shared[1] <= 0:
            del _PROCESS[path]
            if shared[0] >= 0:
                with contextlib.suppress(OSError):
                    os.close(shared[0])

    def release_all(self) -> None:
        for session_id in list(self.held):
            self.release(session_id)

    def forget(self, session_id: str) -> None:
        """The session is gone: drop its lock file too (we hold the lock)."""
        with contextlib.suppress(OSError, ValueError):
            self._path(session_id).unlink()
        self.release(session_id)
