"""Throwaway keyring backends for tests: never chosen automatically (negative priority).

In-process::

    import keyring
    from ketch.testing.keyring_backend import MemoryKeyring
    keyring.set_keyring(MemoryKeyring())

For a subprocess (``ketch`` as a CLI), through keyring's own variable::

    PYTHON_KEYRING_BACKEND=ketch.testing.keyring_backend.FileKeyring
    KETCH_TEST_KEYRING_FILE=/tmp/.../keyring.json   # shared by every process of a test

``throwaway_keyring()`` does the in-process setup for the length of a ``with`` block
(a store opened inside it gets a fresh key). ``LockedKeyring`` behaves like a locked
Secret Service (every read raises ``KeyringLocked``). These backends keep secrets in memory or a plain file: for tests
and throwaway stores only, never for real keys.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from keyring.backend import KeyringBackend
from keyring.errors import KeyringLocked, PasswordDeleteError

FILE_ENV = "KETCH_TEST_KEYRING_FILE"


class MemoryKeyring(KeyringBackend):
    """Secrets in a dict, for one process."""

    priority = -1  # type: ignore[assignment]  # never picked by keyring's auto-detection

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.values.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.values[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.values.pop((service, username), None) is None:
            raise PasswordDeleteError(f"no password for {service}/{username}")


class FileKeyring(KeyringBackend):
    """Secrets in a JSON file named by ``KETCH_TEST_KEYRING_FILE``, shared across processes."""

    priority = -1  # type: ignore[assignment]

    @staticmethod
    def path() -> Path:
        named = os.environ.get(FILE_ENV)
        return (
            Path(named)
            if named
            else Path(tempfile.gettempdir())
            / f"ketch-test-keyring-{os.getuid() if hasattr(os, 'getuid') else 0}.json"
        )

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path().read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, str]) -> None:
        path = self.path()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(tmp, path)

    def get_password(self, service: str, username: str) -> str | None:
        return self._read().get(f"{service}\x00{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        data = self._read()
        data[f"{service}\x00{username}"] = password
        self._write(data)

    def delete_password(self, service: str, username: str) -> None:
        data = self._read()
        if data.pop(f"{service}\x00{username}", None) is None:
            raise PasswordDeleteError(f"no password for {service}/{username}")
        self._write(data)


class SlowFileKeyring(FileKeyring):
    """A :class:`FileKeyring` whose reads take ``KETCH_TEST_KEYRING_DELAY`` seconds, as a
    Secret Service on a busy bus may; each read's start and end (``time.time()``) are
    appended to ``KETCH_TEST_KEYRING_LOG`` as a JSON line, so a test can tell what
    happened while the key was being fetched."""

    priority = -1  # type: ignore[assignment]

    def get_password(self, service: str, username: str) -> str | None:
        import time

        began = time.time()
        time.sleep(float(os.environ.get("KETCH_TEST_KEYRING_DELAY") or 0))
        value = super().get_password(service, username)
        log = os.environ.get("KETCH_TEST_KEYRING_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"began": began, "ended": time.time()}) + "\n")
        return value


class LockedKeyring(KeyringBackend):
    """A keyring that is there but locked: reads and writes raise ``KeyringLocked``."""

    priority = -1  # type: ignore[assignment]

    def get_password(self, service: str, username: str) -> str | None:
        raise KeyringLocked("the collection is locked")

    def set_password(self, service: str, username: str, password: str) -> None:
        raise KeyringLocked("the collection is locked")

    def delete_password(self, service: str, username: str) -> None:
        raise KeyringLocked("the collection is locked")


@contextmanager
def throwaway_keyring() -> Iterator[MemoryKeyring]:
    """Use an empty in-memory keyring inside the block, then put the previous one back."""
    import keyring.core

    previous = keyring.core._keyring_backend  # type: ignore[attr-defined]
    backend = MemoryKeyring()
    keyring.core.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.core._keyring_backend = previous  # type: ignore[attr-defined]
