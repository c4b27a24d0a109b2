"""API keys in the OS keyring (service ``ketch``, username = the provider's name).

Every failure of the keyring library or its backend becomes one
:class:`CredentialStoreError` with a one-line message a person can act on. A
plaintext backend (``keyrings.alt``) is refused: a key must not land in a file.
"""

from __future__ import annotations

from typing import Any

SERVICE = "ketch"


class CredentialStoreError(Exception):
    def __init__(self, message: str, *, missing_backend: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.missing_backend = missing_backend


def backend() -> Any:
    """The active keyring backend, checked to be a real secret store."""
    try:
        from keyring.backends import fail

        from ketch_import_kit.keyring import keyring

        chosen = keyring.get_keyring()
    except Exception as exc:  # noqa: BLE001 - a bad PYTHON_KEYRING_BACKEND or broken install
        raise translate(exc) from None
    if isinstance(chosen, fail.Keyring):
        raise CredentialStoreError(_NO_BACKEND, missing_backend=True)
    module = type(chosen).__module__
    if module.startswith("keyrings.alt") and "plaintext" in type(chosen).__name__.lower():
        raise CredentialStoreError(
            f"the configured keyring backend ({backend_name(chosen)}) stores secrets in a plain file; ketch refuses to use it"
        )
    return chosen


def backend_name(chosen: Any) -> str:
    name = getattr(chosen, "name", None)
    return name if isinstance(name, str) and name else type(chosen).__name__


_NO_BACKEND = (
    "no OS keyring is available (no Secret Service, macOS Keychain or Windows Credential Locker "
    "was found); install and unlock one (e.g. gnome-keyring), or put the key in the environment"
)


def translate(exc: BaseException) -> CredentialStoreError:
    """A one-line error for anything the keyring library or its backend raised."""
    from keyring import errors

    detail = " ".join(str(exc).split())[:160] or type(exc).__name__
    if isinstance(exc, errors.NoKeyringError):
        return CredentialStoreError(_NO_BACKEND, missing_backend=True)
    if isinstance(exc, errors.KeyringLocked):
        return CredentialStoreError(
            "the OS keyring is locked; unlock it (for example by logging in to the desktop session) and try again"
        )
    if isinstance(exc, errors.InitError):
        return CredentialStoreError(
            f"the OS keyring could not be opened ({detail}); is its service running and unlocked?"
        )
    if isinstance(exc, errors.PasswordSetError):
        return CredentialStoreError(f"the OS keyring refused to store the key ({detail})")
    if isinstance(exc, (ImportError, AttributeError, RuntimeError)) and not isinstance(
        exc, errors.KeyringError
    ):
        return CredentialStoreError(
            f"the keyring backend could not be loaded ({type(exc).__name__}: {detail}); check PYTHON_KEYRING_BACKEND"
        )
    return CredentialStoreError(f"the OS keyring failed ({type(exc).__name__}: {detail})")


def get_key(provider: str) -> str | None:
    chosen = backend()
    try:
        value = chosen.get_password(SERVICE, provider)
    except Exception as exc:  # noqa: BLE001 - backend errors of every kind
        raise translate(exc) from None
    return value or None


def set_key(provider: str, key: str) -> str:
    """Store the key; returns the backend's name (for the confirmation message)."""
    chosen = backend()
    try:
        chosen.set_password(SERVICE, provider, key)
    except Exception as exc:  # noqa: BLE001
        raise translate(exc) from None
    return backend_name(chosen)


def delete_key(provider: str) -> bool:
    """Remove the key; False when there was none."""
    from keyring.errors import PasswordDeleteError

    chosen = backend()
    try:
        if chosen.get_password(SERVICE, provider) is None:
            return False
        chosen.delete_password(SERVICE, provider)
    except PasswordDeleteError:
        return False
    except Exception as exc:  # noqa: BLE001
        raise translate(exc) from None
    return True
