"""Where the file tools read and write: the disk, or a frontend's own view of the files.

An editor speaking ACP can hold files the disk does not show yet (unsaved buffers)
and wants edits to land in those buffers (so its undo and diff views see them). Such a
frontend attaches a :class:`FileBackend` to a session; the file tools of that session
then read and write through it. Everything else stays the tools' own: path checks,
the policy, the read-coverage guard (it fingerprints the bytes the backend returned),
diffs. Without a backend the tools use the disk, as always.

A backend's methods are called from a worker thread (the file tools do their I/O
there), never from the event loop.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Protocol


class FileBackend(Protocol):
    """One session's view of the files. ``path`` is absolute and already checked."""

    def read(self, path: Path) -> bytes | None:
        """The file's current content as UTF-8 bytes, or None to let the tool read the
        disk itself. Raise ``FileNotFoundError`` when the file does not exist, any other
        ``OSError`` (with a message the model can act on) when it cannot be read."""
        ...

    def write(self, path: Path, data: bytes) -> bool:
        """Store ``data`` as the file's content (creating it), True when done; False to
        let the tool write the disk itself. Raise ``OSError`` when it failed."""
        ...


_lock = threading.Lock()
_backends: dict[str, FileBackend] = {}


def attach(session_id: str, backend: FileBackend) -> None:
    with _lock:
        _backends[session_id] = backend


def detach(session_id: str) -> None:
    with _lock:
        _backends.pop(session_id, None)


def backend_for(session_id: str) -> FileBackend | None:
    with _lock:
        return _backends.get(session_id)
