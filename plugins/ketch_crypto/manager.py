"""Where the data key lives, and everything done to it: load, mint, stage, promote, move.

Two providers (``[storage] key``):

* ``keyring``: the OS keyring (service ``ketch``, user ``data-key``), as :mod:`keys`;
* ``passphrase``: ``sessions.key`` beside the database, the key wrapped under a KEK
  derived from a passphrase (:mod:`wrapped`). The KEK, once derived, is kept for the
  process and cached in the kernel session keyring for ``key_cache_timeout``.

``auto`` (the default) uses the wrapped-key file when there is one; else the keyring
for an existing store; and for a new store the keyring when a safe backend is there,
else a passphrase. A key that should exist and cannot be had is ``RecoveryLocked``;
a wrong passphrase is :class:`~ketch_crypto.wrapped.WrongPassphrase`; with no store yet
and no way to keep a key, ``StoreUnavailable(exists=False)``. Nothing here mints a key
over an existing database.

A rotation stages the new key beside the current one (``data-key-next`` in the
keyring, ``sessions.key.next`` under the same KEK), the store re-encrypts under it,
then :meth:`KeyManager.promote` makes it the current key, which retires the old one.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Any

from ketch.api import KetchError, RecoveryLocked, StoreUnavailable
from ketch_crypto import kernel_keyring, keys, passphrases, wrapped
from ketch_crypto.files import key_file
from ketch_crypto.key_file import KeyFileProvider
from ketch_crypto.settings import KeySettings
from ketch_crypto.wrapped import WrappedKey, WrongPassphrase

# The KEKs this process has derived or read, by the salt they belong to, so a second
# cipher (the prompt history's) never asks again.
_KEKS: dict[bytes, bytes] = {}
_CHECKED: set[bytes] = set()  # salts whose KEK came from KETCH_PASSPHRASE in this process


def forget() -> None:
    """Drop every KEK this process holds (tests run many stores in one process)."""
    _KEKS.clear()
    _CHECKED.clear()
    _FAILED.clear()
    passphrases.forget()


NO_WAY = (
    "{why}, and no other way to keep the session key is chosen yet: run `ketch` on a terminal "
    'once to choose one (a passphrase, or a key file), or set KETCH_PASSPHRASE or [storage] key = "file"'
)
# Per key file, a failure no kernel of this process can undo: the passphrase given in
# KETCH_PASSPHRASE (the process's, read once) is wrong, or the person at the process's
# terminal mistyped or declined it. A second cipher (the prompt history's, another
# kernel's) fails the same way instead of asking again. Any other failure depends on
# a kernel's settings or on the kernel keyring's cache, and is not kept: each kernel
# tries for itself.
_FAILED: dict[Path, StoreUnavailable] = {}


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def cache_name(salt: bytes) -> str:
    return f"{kernel_keyring.PREFIX}store-kek:v1:{hashlib.sha256(salt).hexdigest()[:32]}"


class KeyringProvider:
    name = "keyring"

    def exists(self) -> bool:
        try:
            return keys.read_entry() is not None
        except KetchError:
            return False

    def load(self, create: bool) -> bytes:
        return keys.load_data_key(create)

    def install(self, key: bytes) -> None:
        current = keys.read_entry()
        if current is not None and current != key:
            raise KetchError(
                "the OS keyring already holds a different ketch data key (another state directory's?); "
                "remove it first (`secret-tool clear service ketch username data-key`) if it is not needed"
            )
        keys.write_entry(key)

    def remove(self) -> None:
        keys.delete_entry()
        keys.delete_entry(keys.PENDING)

    def pending(self) -> bytes | None:
        return keys.read_entry(keys.PENDING)

    def stage(self, key: bytes) -> None:
        keys.write_entry(key, keys.PENDING)

    def promote(self, key: bytes) -> None:
        keys.write_entry(key)  # overwrites the old key: it is retired here
        keys.delete_entry(keys.PENDING)

    def discard_pending(self) -> None:
        keys.delete_entry(keys.PENDING)

    def status(self) -> dict[str, Any]:
        return {"provider": self.name, "where": keys.where()}


class PassphraseProvider:
    name = "passphrase"

    def __init__(self, path: Path, cache_seconds: int, detach: bool) -> None:
        self.path = path
        self.pending_path = path.with_name(path.name + ".next")
        self.cache_seconds = cache_seconds
        self.detach = detach
        self.kek: bytes | None = None  # of the current file, once known
        self.creating_because: str | None = None  # why a new store got a passphrase (auto)

    def exists(self) -> bool:
        return self.path.exists()

    # --- loading -----------------------------------------------------------------------

    def load(self, create: bool) -> bytes:
        failed = _FAILED.get(self.path)
        if failed is not None:
            raise failed.with_traceback(None)
        return self._load(create)

    def _final(self, exc: StoreUnavailable) -> StoreUnavailable:
        """``exc``, kept for the process (see ``_FAILED``)."""
        _FAILED[self.path] = exc
        return exc

    def _load(self, create: bool) -> bytes:
        current = wrapped.read(self.path)
        if current is None:
            if not create:
                raise RecoveryLocked(
                    f"recovery-locked: the session database exists but its wrapped key {self.path} is missing. "
                    "Put the file back (or `ketch store key import` a recovery code) and run again; ketch will not "
                    "create a new key over existing sessions."
                )
            return self._create()
        try:
            return self._unwrap(current)
        finally:
            self._leave_session_keyring()

    def _unwrap(self, current: WrappedKey) -> bytes:
        explicit = passphrases.take()
        if (
            explicit is not None
        ):  # a passphrase given explicitly is always checked (once per process)
            kek = _KEKS.get(current.kdf.salt) if current.kdf.salt in _CHECKED else None
            kek = kek or current.kdf.derive(explicit)
            try:
                key = current.unwrap(kek, self.path)
            except WrongPassphrase as exc:
                raise self._final(exc) from None
            _CHECKED.add(current.kdf.salt)
            self._remember(current, kek)
            return key
        for kek in (_KEKS.get(current.kdf.salt), self._cached(current)):
            if kek is None:
                continue
            try:
                key = current.unwrap(kek, self.path)
            except WrongPassphrase:
                kernel_keyring.revoke(cache_name(current.kdf.salt))  # stale: the file changed
                continue
            self._remember(current, kek, cache=False)
            return key
        if not passphrases.can_prompt():
            raise StoreUnavailable(
                f"the session store's key is wrapped under a passphrase ({self.path}) and none was given: "
                "set KETCH_PASSPHRASE, or run ketch on a terminal to type it",
                exists=True,
            )
        for attempt in range(3):
            typed = passphrases.ask("Passphrase for ketch's saved sessions: ")
            if typed is None:
                break
            kek = current.kdf.derive(typed)
            try:
                key = current.unwrap(kek, self.path)
            except WrongPassphrase as exc:
                if attempt < 2:
                    passphrases.tell("ketch: wrong passphrase; try again")
                    continue
                raise self._final(exc) from None
            self._remember(current, kek)
            return key
        raise self._final(
            StoreUnavailable("no passphrase was typed: the session store stays closed", exists=True)
        )

    def _cached(self, current: WrappedKey) -> bytes | None:
        if self.cache_seconds <= 0:
            return None
        kek = kernel_keyring.read(cache_name(current.kdf.salt))
        return kek if kek is not None and len(kek) == 32 else None

    def _remember(self, current: WrappedKey, kek: bytes, *, cache: bool = True) -> None:
        _KEKS[current.kdf.salt] = kek
        self.kek = kek
        # The session keyring is per thread, but what is put in it is there for the whole
        # process: only the main thread, which leaves it before starting children, caches.
        if cache and self.cache_seconds > 0 and _main_thread():
            kernel_keyring.store(cache_name(current.kdf.salt), kek, self.cache_seconds)

    def _leave_session_keyring(self) -> None:
        if self.detach and _main_thread():
            kernel_keyring.detach()

    def _create(self) -> bytes:
        chosen = passphrases.take()
        if chosen is not None:
            problem = passphrases.too_short(chosen)
            if problem:
                raise StoreUnavailable(
                    f"KETCH_PASSPHRASE is too short to protect the session store ({problem})",
                    exists=False,
                )
        elif passphrases.can_prompt() and not self.creating_because:
            # Chosen (storage.key = "passphrase"): typed now. Under "auto" nothing is
            # chosen yet, and only the interactive shell asks that question.
            chosen = passphrases.ask_new(
                'ketch encrypts saved sessions under a passphrase ([storage] key = "passphrase").\n'
                "Choose one (asked once per login session); an empty line runs this session unsaved."
            )
            if chosen is None:
                raise self._final(
                    StoreUnavailable(
                        "no passphrase was chosen, so sessions are not saved", exists=False
                    )
                )
        else:
            raise StoreUnavailable(
                NO_WAY.format(why=self.creating_because or 'storage.key = "passphrase"'),
                exists=False,
            )
        key = os.urandom(32)
        self.write_new(key, chosen)
        self._leave_session_keyring()
        return key

    def write_new(self, key: bytes, passphrase: str, kdf: wrapped.Kdf | None = None) -> None:
        """Wrap ``key`` under ``passphrase`` with a fresh salt, replacing the file atomically."""
        kdf = kdf or wrapped.default_kdf()
        kek = kdf.derive(passphrase)
        sealed = wrapped.seal(key, kek, kdf)
        old = wrapped.read(self.path) if self.path.exists() else None
        wrapped.write(self.path, sealed)
        if old is not None and old.kdf.salt != kdf.salt:
            _KEKS.pop(old.kdf.salt, None)
            kernel_keyring.revoke(cache_name(old.kdf.salt))
        self._remember(sealed, kek)

    # --- rotation and moves ------------------------------------------------------------

    def _kek_for(self, current: WrappedKey) -> bytes:
        kek = _KEKS.get(current.kdf.salt) or self.kek
        if kek is None:
            self._unwrap(current)
            kek = _KEKS[current.kdf.salt]
        return kek

    def pending(self) -> bytes | None:
        current, staged = wrapped.read(self.path), wrapped.read(self.pending_path)
        if current is None or staged is None or staged.kdf.salt != current.kdf.salt:
            return None
        try:
            return staged.unwrap(self._kek_for(current), self.pending_path)
        except WrongPassphrase:
            return None

    def stage(self, key: bytes) -> None:
        current = wrapped.read(self.path)
        if current is None:
            raise RecoveryLocked(f"{self.path} is missing; cannot stage a new key")
        wrapped.write(self.pending_path, current.rewrapped(key, self._kek_for(current)))

    def promote(self, key: bytes) -> None:
        if self.pending_path.exists():
            os.replace(self.pending_path, self.path)  # one rename: the old key is gone with it
            wrapped.sync_directory(self.path.parent)
            return
        current = wrapped.read(self.path)
        if current is None:
            raise RecoveryLocked(f"{self.path} is missing")
        if current.unwrap(self._kek_for(current), self.path) != key:
            wrapped.write(self.path, current.rewrapped(key, self._kek_for(current)))

    def discard_pending(self) -> None:
        self.pending_path.unlink(missing_ok=True)

    def install(self, key: bytes, passphrase: str) -> None:
        self.write_new(key, passphrase)

    def remove(self) -> None:
        current = wrapped.read(self.path) if self.path.exists() else None
        self.path.unlink(missing_ok=True)
        self.pending_path.unlink(missing_ok=True)
        wrapped.sync_directory(self.path.parent)
        if current is not None:
            _KEKS.pop(current.kdf.salt, None)
            kernel_keyring.revoke(cache_name(current.kdf.salt))

    def status(self) -> dict[str, Any]:
        info: dict[str, Any] = {"provider": self.name, "where": str(self.path)}
        try:
            current = wrapped.read(self.path)
        except KetchError as exc:
            info["problem"] = exc.message
            return info
        if current is None:
            info["problem"] = "the file is missing"
            return info
        info["created"] = current.created
        info["kdf"] = current.kdf.describe()
        if not kernel_keyring.available():
            info["cache"] = (
                "unavailable here (no kernel keyring): the passphrase is asked at every start"
            )
        elif self.cache_seconds <= 0:
            info["cache"] = "off (key_cache_timeout = 0)"
        elif kernel_keyring.read(cache_name(current.kdf.salt)) is not None:
            info["cache"] = (
                f"unlocked in the kernel session keyring (for up to {_hours(self.cache_seconds)} from unlocking)"
            )
        else:
            info["cache"] = (
                f"not unlocked in this login session (cached for {_hours(self.cache_seconds)} once typed)"
            )
        return info


def chosen_file(manager: KeyManager, has_wrapped: bool, create: bool) -> bool:
    """Under "auto": the key file is the provider when it exists (and no wrapped key
    does), or the store was made with it (a missing file is then recovery-locked)."""
    if has_wrapped:
        return False
    return manager.file.exists() or (not create and manager.recorded == "file")


def _hours(seconds: int) -> str:
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    if seconds % 60 == 0:
        return f"{seconds // 60} min"
    return f"{seconds} s"


Provider = KeyringProvider | PassphraseProvider | KeyFileProvider


class KeyManager:
    """The data key of one store (database path), through the configured provider."""

    def __init__(self, settings: KeySettings, database: Path, *, detach: bool = True) -> None:
        self.settings = settings
        self.database = database
        self.keyring = KeyringProvider()
        self.passphrase = PassphraseProvider(key_file(database), settings.cache_seconds, detach)
        self.file = KeyFileProvider()
        self.provider: Provider | None = None
        self.recorded: str | None = None  # the provider the store recorded when it was made

    def bind(self, database: Path, recorded: str | None = None) -> None:
        if database != self.database:
            self.__init__(self.settings, database, detach=self.passphrase.detach)  # type: ignore[misc]
        self.recorded = recorded

    # --- which provider -------------------------------------------------------------------

    def choose(self, create: bool) -> Provider:
        setting = self.settings.provider
        has_file = self.passphrase.exists()
        if setting == "passphrase":
            return self.passphrase
        if setting == "file" or (setting == "auto" and chosen_file(self, has_file, create)):
            return self.file
        if setting == "keyring":
            if has_file and not create:
                raise StoreUnavailable(
                    f'the session key is wrapped under a passphrase ({self.passphrase.path}), but storage.key = "keyring": '
                    'set key = "passphrase" (or "auto"), or move it with `ketch store key passphrase --to keyring`',
                    exists=True,
                )
            return self.keyring
        if has_file or (not create and self.recorded == "passphrase"):
            return self.passphrase  # a missing key file is then recovery-locked, never the keyring
        if not create:
            return self.keyring
        why = keys.usable()
        if why is None:
            return self.keyring
        self.passphrase.creating_because = why
        return self.passphrase

    def load(self, create: bool) -> bytes:
        provider = self.choose(create)
        if provider is self.keyring and create and self.settings.provider == "auto":
            try:
                key = provider.load(True)
            except RecoveryLocked:
                raise
            except KetchError as exc:  # the keyring looked usable but would not keep the key
                self.passphrase.creating_because = exc.message.split(". ")[0]
                provider = self.passphrase
                key = provider.load(True)
        else:
            key = provider.load(create)
        self.provider = provider
        return key

    def current(self) -> Provider:
        return self.provider or self.choose(False)

    # --- the store's key-management interface --------------------------------------------

    def pending(self) -> bytes | None:
        return self.current().pending()

    def stage(self, key: bytes) -> None:
        self.current().stage(key)

    def promote(self, key: bytes) -> None:
        self.current().promote(key)

    def discard_pending(self) -> None:
        self.current().discard_pending()

    def status(self) -> dict[str, Any]:
        info = self.current().status()
        info["setting"] = self.settings.provider
        return info

    def move(self, key: bytes, target: str, passphrase: str | None = None) -> str:
        """Keep ``key`` with ``target`` ("keyring" or "passphrase") and remove it from the other."""
        source = self.current()
        if target == source.name:
            raise KetchError(
                f"the session key is already kept by the {target} provider", exit_code=2
            )
        if target == "keyring":
            why = keys.usable()
            if why:
                raise KetchError(f"cannot move the session key to the OS keyring: {why}")
            self.keyring.install(key)
            if self.keyring.load(False) != key:
                raise KetchError("the OS keyring did not keep the session key; nothing was moved")
            source.remove()
            self.provider = self.keyring
        else:
            if not passphrase:
                raise KetchError("no passphrase given; nothing was moved", exit_code=2)
            self.passphrase.install(key, passphrase)
            source.remove()
            self.provider = self.passphrase
        return target

    def install(self, key: bytes, passphrase: str | None = None) -> str:
        """Make ``key`` the current key (an imported recovery code)."""
        provider = self.provider or self.choose(True)
        if provider is self.passphrase:
            if not passphrase:
                raise KetchError(
                    "a passphrase is needed to keep the imported key; nothing was imported",
                    exit_code=2,
                )
            self.passphrase.install(key, passphrase)
        elif provider is self.file:
            self.file.install(key)
        else:
            keys.write_entry(key)
        self.provider = provider
        return provider.name

    # --- what the key commands need --------------------------------------------------------

    def stay_in_session_keyring(self) -> None:
        """Key commands keep reaching the kernel keyring after unlocking (no detach)."""
        self.passphrase.detach = False

    def cipher_for(self, key: bytes) -> Any:
        from ketch_crypto.cipher import AesGcmFieldCipher

        return AesGcmFieldCipher.from_key(key, self)

    def recovery_code(self, key: bytes) -> str:
        from ketch_crypto import recovery

        return recovery.encode(key)

    def key_from_code(self, text: str) -> bytes:
        from ketch_crypto import recovery

        return recovery.decode(text)

    def new_passphrase(self, purpose: str, *, env_fallback: bool = False) -> str:
        """A new passphrase: ``KETCH_NEW_PASSPHRASE`` (or, with ``env_fallback``,
        ``KETCH_PASSPHRASE``), else typed twice on the terminal."""
        chosen = passphrases.take(passphrases.NEW_ENV) or (
            passphrases.take() if env_fallback else None
        )
        if chosen is None:
            if not passphrases.can_prompt():
                raise KetchError(
                    f"no new passphrase: set {passphrases.NEW_ENV}, or run this on a terminal",
                    exit_code=2,
                )
            chosen = passphrases.ask_new(purpose)
            if chosen is None:
                raise KetchError("no passphrase was chosen; nothing was changed", exit_code=1)
        problem = passphrases.too_short(chosen)
        if problem:
            raise KetchError(f"{problem}; nothing was changed", exit_code=2)
        return chosen

    def change_passphrase(self, key: bytes, passphrase: str) -> None:
        if self.current() is not self.passphrase:
            raise KetchError(
                "the session key is in the OS keyring, not under a passphrase: `--to passphrase` moves it",
                exit_code=2,
            )
        self.passphrase.write_new(key, passphrase)


def created_at(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "unknown"
