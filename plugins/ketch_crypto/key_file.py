"""The data key in a file only its owner can read (``[storage] key = "file"``).

For machines with no OS keyring where a passphrase would be asked too often (a
container without a kernel keyring, a server reached by scripts). The file is
``$XDG_DATA_HOME/ketch/data.key`` (mode 0600, its directory 0700): never beside the
sessions (``$XDG_STATE_HOME/ketch``), so a copy or a backup of the sessions alone, or
another user, gets nothing readable. It does not protect against anything that runs
as you, nor against a copy of your whole home directory: say so, and prefer the
passphrase when that matters.

A file another user could read, or not owned by you, is refused (it would no longer
be a secret); a missing file over an existing store is recovery-locked, never
replaced by a new key.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Any

from ketch.api import KetchError, RecoveryLocked
from ketch_crypto.keys import decode_key, encode_key

NAME = "data.key"
PROTECTS = (
    "never asks; keeps your sessions from other users and from a copy or backup of the "
    "sessions alone; anything that runs as you, or a copy of your whole home, can read them"
)


def default_path() -> Path:
    """``$XDG_DATA_HOME/ketch/data.key`` (``KETCH_KEY_FILE`` overrides, for tests and odd setups)."""
    override = os.environ.get("KETCH_KEY_FILE")
    if override:
        return Path(override)
    from platformdirs import user_data_dir

    return Path(user_data_dir("ketch", appauthor=False)) / NAME


def _check(path: Path) -> None:
    """Refuse a key file that is not private to its owner."""
    info = path.stat()
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise RecoveryLocked(f"{path} belongs to another user; ketch will not use it as its key")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise RecoveryLocked(
            f"{path} can be read by other users, so its key protects nothing any more: "
            f"run `chmod 600 {path}` if nobody else could have read it, else rotate the key "
            "(`ketch store key rotate`)"
        )


def _write(path: Path, key: bytes, *, replace: bool) -> None:
    """Write the key owner-only: created exclusively (a new key never overwrites an
    old one), or written beside and renamed over it (``replace``)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    target = path.with_name(path.name + ".tmp") if replace else path
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    if replace:
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
    try:
        fd = os.open(target, flags, 0o600)
    except FileExistsError:
        raise KetchError(f"{path} already exists; ketch will not write a new key over it") from None
    try:
        os.write(fd, (encode_key(key) + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    if replace:
        os.replace(target, path)


class KeyFileProvider:
    name = "file"

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()
        self.pending_path = self.path.with_name(self.path.name + ".next")

    def exists(self) -> bool:
        return self.path.exists()

    def _read(self, path: Path) -> bytes | None:
        try:
            _check(path)
            return decode_key(path.read_text(encoding="ascii").strip())
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise RecoveryLocked(f"cannot read the session key file {path}: {exc}") from None

    def load(self, create: bool) -> bytes:
        key = self._read(self.path)
        if key is not None:
            return key
        if not create:
            raise RecoveryLocked(
                f"recovery-locked: the session database exists but its key file {self.path} is missing. "
                "Put the file back (or `ketch store key import` a recovery code) and run again; ketch will "
                "not create a new key over existing sessions."
            )
        key = os.urandom(32)
        try:
            _write(self.path, key, replace=False)
        except KetchError:
            existing = self._read(self.path)  # another process made it first: that is the key
            if existing is None:
                raise
            return existing
        return key

    def install(self, key: bytes) -> None:
        _write(self.path, key, replace=True)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        self.pending_path.unlink(missing_ok=True)

    def pending(self) -> bytes | None:
        return self._read(self.pending_path)

    def stage(self, key: bytes) -> None:
        _write(self.pending_path, key, replace=True)

    def promote(self, key: bytes) -> None:
        if self.pending_path.exists():
            os.replace(self.pending_path, self.path)  # one rename: the old key goes with it
        else:
            _write(self.path, key, replace=True)

    def discard_pending(self) -> None:
        self.pending_path.unlink(missing_ok=True)

    def status(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "provider": self.name,
            "where": str(self.path),
            "protects": PROTECTS,
        }
        if not self.path.exists():
            info["problem"] = "the file is missing"
        return info
