"""ketch_crypto: AES-256-GCM field encryption for the session store, and where its key lives.

Implements ``ketch_field_cipher``. The cipher is lazy: no keyring, key file or
passphrase is touched until the store opens (``cipher.unlock(create=...)``) or first
encrypts, never at import. The key lives where ``[storage] key`` says (``auto``, the
default: the OS keyring when a safe one is there, else a passphrase or a key file, as the
person chose once in the shell: :mod:`ketch_crypto.storage_setup`; see
:mod:`ketch_crypto.manager`). With ``storage.encryption = "off"`` it provides nothing,
and the store runs in plaintext, saying so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import FieldCipher, Kernel, Settings


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_crypto import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def crypto_storage_question(kernel: Kernel) -> dict[str, Any] | None:
    from ketch_crypto.storage_setup import question

    return question(kernel)


@hookimpl
def crypto_set_up_storage(kernel: Kernel, choice: str, passphrase: str | None) -> str | None:
    from ketch_crypto.storage_setup import set_up

    return set_up(kernel, choice, passphrase)


@hookimpl
def ketch_configure(kernel: Kernel) -> None:
    from ketch_crypto.passphrases import ENV, NEW_ENV, take

    # Out of the kernel's copy of the environment as early as possible (os.environ too).
    for name in (ENV, NEW_ENV):
        if name in kernel.environ:
            take(name, kernel.environ)
    if kernel.hooks.first("store_pending", kernel=kernel) and _unwrapped_by_passphrase(kernel):
        # A key under a passphrase may be asked for on the terminal, or read from the kernel
        # keyring, which this process must leave before it starts any child: both belong to
        # the main thread, before the session starts. So this store opens now, not
        # concurrently with the first request (``store_open_concurrently``).
        import contextlib

        from ketch.api import KetchError

        with contextlib.suppress(KetchError):  # kept as the store's problem
            _ = kernel.store


def _unwrapped_by_passphrase(kernel: Kernel) -> bool:
    from ketch.api import state_dir
    from ketch_crypto.files import passphrase_files

    if kernel.settings.section("storage").get("key") == "passphrase":
        return True
    return any(path.exists() for path in passphrase_files(state_dir()))


@hookimpl
def ketch_field_cipher(settings: Settings) -> FieldCipher | None:
    if settings.section("storage").get("encryption", "on") == "off":
        return None
    return make_cipher(settings)


def make_cipher(settings: Settings, *, detach: bool = True) -> FieldCipher:
    """The cipher for the store in the state dir; ``detach=False`` for key commands that
    must still reach the kernel keyring after unlocking."""
    from ketch.api import state_dir
    from ketch_crypto.cipher import AesGcmFieldCipher, DerivedKeys
    from ketch_crypto.manager import KeyManager
    from ketch_crypto.settings import key_settings

    manager = KeyManager(key_settings(settings), state_dir() / "sessions.db", detach=detach)
    return AesGcmFieldCipher(lambda create: DerivedKeys(manager.load(create)), manager)
