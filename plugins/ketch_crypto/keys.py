"""The data key in the OS keyring: read it, or mint it once for a brand-new store.

The key never touches the disk beside the data. Every way the keyring can fail maps
to a clear error: a key that should exist but cannot be had is ``RecoveryLocked``
(never answered by minting a new key over existing data), and a keyring that cannot
keep a secret safely (none at all, the null or fail backends, a plaintext file) is
refused before any key is written to it.
"""

from __future__ import annotations

import base64
import os
from typing import Any

from ketch.api import KetchError, RecoveryLocked

SERVICE = "ketch"
USERNAME = "data-key"
PENDING = "data-key-next"  # a rotation's new key, until the database is re-encrypted under it
_PREFIX = "ketch-data-key:v1:"
_WHERE = f'the OS keyring (service "{SERVICE}", user "{USERNAME}")'
_OFF_HINT = 'or set storage.encryption = "off" in config.toml to keep sessions unencrypted'
_SETUP_HINT = "Install or unlock a Secret Service (gnome-keyring, KeePassXC), " + _OFF_HINT


def encode_key(key: bytes) -> str:
    return _PREFIX + base64.b64encode(key).decode("ascii")


def decode_key(value: str) -> bytes:
    if not value.startswith(_PREFIX):
        raise RecoveryLocked(
            f"the value in {_WHERE} is not a ketch data key; the session store cannot be opened"
        )
    try:
        key = base64.b64decode(value[len(_PREFIX) :], validate=True)
    except ValueError:
        key = b""
    if len(key) != 32:
        raise RecoveryLocked(
            f"the data key in {_WHERE} is malformed; the session store cannot be opened"
        )
    return key


def insecure_backend(backend: Any) -> str | None:
    """Why ``backend`` cannot keep the data key, or None when it can."""
    from keyring.backends import chainer, fail

    name = f"{type(backend).__module__}.{type(backend).__name__}"
    if isinstance(backend, chainer.ChainerBackend):
        members = list(getattr(backend, "backends", []) or [])
        if not members:
            return "no OS keyring is available"
        backend = members[0]
        name = f"{type(backend).__module__}.{type(backend).__name__}"
    if isinstance(backend, fail.Keyring):
        return "no OS keyring is available"
    if name == "keyring.backends.null.Keyring":
        return "the keyring is disabled (null backend)"
    if "plaintext" in name.lower():
        return f"the keyring backend {name} stores secrets in a plaintext file"
    return None


def _keyring_errors() -> tuple[type[BaseException], ...]:
    from keyring.errors import KeyringError

    return (KeyringError, RuntimeError, OSError)


def _explain(exc: BaseException) -> str:
    from keyring.errors import InitError, KeyringLocked, NoKeyringError

    if isinstance(exc, KeyringLocked):
        return "the OS keyring is locked: unlock it (log in to the desktop session, or unlock the login keyring) and run again"
    if isinstance(exc, NoKeyringError):
        return "no OS keyring is available"
    if isinstance(exc, InitError):
        return f"the OS keyring could not be opened ({exc}); it may be locked or its unlock prompt was dismissed"
    return f"the OS keyring failed: {type(exc).__name__}: {exc}"


def load_data_key(create: bool) -> bytes:
    """The data key from the keyring; with ``create``, mint and store one if absent."""
    from ketch_import_kit.keyring import keyring

    try:
        backend = keyring.get_keyring()
        value = keyring.get_password(SERVICE, USERNAME)
    except _keyring_errors() as exc:
        if create:  # nothing is stored yet: not locked out of anything, just no keyring
            raise KetchError(
                f"cannot keep the session key in {_WHERE}: {_explain(exc)}. {_SETUP_HINT}"
            ) from None
        raise RecoveryLocked(
            f"recovery-locked: cannot read the session key from {_WHERE}: {_explain(exc)}"
        ) from None
    if value is not None:
        return decode_key(value)
    if not create:
        raise RecoveryLocked(
            f"recovery-locked: the session database exists but its key is missing from {_WHERE}. "
            "Restore the key (unlock the keyring that holds it, or `ketch store key import` a recovery code) and run again; "
            "ketch will not create a new key "
            "over existing sessions. To start over, move sessions.db away (its sessions stay unreadable without the key)."
        )
    why = insecure_backend(backend)
    if why:
        raise KetchError(f"cannot keep the session key safely: {why}. {_SETUP_HINT}")
    key = os.urandom(32)
    try:
        keyring.set_password(SERVICE, USERNAME, encode_key(key))
        stored = keyring.get_password(SERVICE, USERNAME)
    except _keyring_errors() as exc:
        raise KetchError(
            f"cannot store the session key in {_WHERE}: {_explain(exc)}; {_OFF_HINT}"
        ) from None
    if stored is None:
        raise KetchError(
            f"the keyring did not keep the session key ({type(backend).__name__}); {_OFF_HINT}"
        )
    # Another process may have minted first: whatever the keyring holds is the key.
    return decode_key(stored)


def read_entry(username: str = USERNAME) -> bytes | None:
    """A key stored under ``username``, or None; a keyring failure is ``RecoveryLocked``."""
    from ketch_import_kit.keyring import keyring

    try:
        value = keyring.get_password(SERVICE, username)
    except _keyring_errors() as exc:
        raise RecoveryLocked(
            f"cannot read the session key from {_WHERE}: {_explain(exc)}"
        ) from None
    return None if value is None else decode_key(value)


def write_entry(key: bytes, username: str = USERNAME) -> None:
    """Store ``key`` under ``username`` (refusing a keyring that cannot keep it safely)."""
    from ketch_import_kit.keyring import keyring

    try:
        why = insecure_backend(keyring.get_keyring())
        if why:
            raise KetchError(f"cannot keep the session key safely: {why}")
        keyring.set_password(SERVICE, username, encode_key(key))
        stored = keyring.get_password(SERVICE, username)
    except _keyring_errors() as exc:
        raise KetchError(f"cannot store the session key in {_WHERE}: {_explain(exc)}") from None
    if stored is None or decode_key(stored) != key:
        raise KetchError("the OS keyring did not keep the session key")


def delete_entry(username: str = USERNAME) -> bool:
    from keyring.errors import PasswordDeleteError

    from ketch_import_kit.keyring import keyring

    try:
        if keyring.get_password(SERVICE, username) is None:
            return False
        keyring.delete_password(SERVICE, username)
    except PasswordDeleteError:
        return False
    except _keyring_errors() as exc:
        raise KetchError(f"cannot remove the session key from {_WHERE}: {_explain(exc)}") from None
    return True


def usable() -> str | None:
    """Why the OS keyring cannot hold a new data key here, or None when it can."""
    from ketch_import_kit.keyring import keyring

    try:
        return insecure_backend(keyring.get_keyring())
    except _keyring_errors() as exc:
        return _explain(exc)
    except Exception as exc:  # noqa: BLE001 - a broken PYTHON_KEYRING_BACKEND
        return f"the keyring backend could not be loaded ({type(exc).__name__})"


def where() -> str:
    from ketch_import_kit.keyring import keyring

    try:
        backend = keyring.get_keyring()
        name = getattr(backend, "name", None) or type(backend).__name__
    except Exception:  # noqa: BLE001
        name = "unavailable"
    return f"{_WHERE}, backend {name}"
