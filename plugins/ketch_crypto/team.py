"""Team keys: one data key for a shared store, wrapped to each member's X25519 public key.

Each person (or CI machine) has an *identity*: an X25519 key pair whose private half is
kept like the personal data key (the OS keyring, user ``team-identity``; or, where there
is no safe keyring, ``identity.key`` in the state directory wrapped under the
passphrase). Its public half is shown as ``ketch-x25519-1:<base64url>`` and is what a
member hands to another to be let in; nothing secret ever travels.

The team's data key is wrapped to each member the way age wraps a file key to an
X25519 recipient: an ephemeral key pair, the shared secret through HKDF-SHA-256
(salt: ephemeral public key || recipient public key; info: a label and the store's
context), and ChaCha20-Poly1305 over the 32-byte data key with that context as
associated data::

    0x01 | ephemeral public key (32) | sealed data key (32 + 16 tag)

Adding a member wraps the key once more; removing one deletes their wrapping *and* then
rotates the data key (a removed member may have kept the old key), so no passphrase is
ever shared and a removed member reads nothing written after.
"""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ketch.api import IntegrityError, KetchError
from ketch_crypto.files import IDENTITY_FILE

PUBLIC_PREFIX = "ketch-x25519-1:"
IDENTITY_USER = "team-identity"
WRAP_VERSION = 1
_LABEL = b"ketch/team-key/v1"


def _raw(public: X25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def public_text(raw: bytes) -> str:
    return PUBLIC_PREFIX + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def parse_public(text: str) -> bytes:
    """The 32 raw bytes of a ``ketch-x25519-1:...`` public key, or a clear error."""
    text = text.strip()
    if not text.startswith(PUBLIC_PREFIX):
        raise KetchError(
            f"not a ketch public key: {text[:40]!r} (it starts with {PUBLIC_PREFIX}; "
            "`ketch store key identity` prints yours)",
            exit_code=2,
        )
    body = text[len(PUBLIC_PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise KetchError(f"the public key {text[:40]}... is malformed", exit_code=2)
    return raw


def fingerprint(public: str) -> str:
    """A short stable name of a public key (SHA-256, hex, 16 characters)."""
    return hashlib.sha256(parse_public(public)).hexdigest()[:16]


def _wrap_key(shared: bytes, ephemeral: bytes, recipient: bytes, context: bytes) -> bytes:
    return HKDF(
        algorithm=hashes.SHA256(),
        length=32,
        salt=ephemeral + recipient,
        info=_LABEL + b"\x00" + context,
    ).derive(shared)


def wrap(data_key: bytes, recipient: str, context: bytes) -> bytes:
    """Seal ``data_key`` so that only the holder of ``recipient``'s private key opens it."""
    recipient_raw = parse_public(recipient)
    ephemeral = X25519PrivateKey.generate()
    shared = ephemeral.exchange(X25519PublicKey.from_public_bytes(recipient_raw))
    ephemeral_raw = _raw(ephemeral.public_key())
    key = _wrap_key(shared, ephemeral_raw, recipient_raw, context)
    # One key, one message: the zero nonce is safe here (as in age's X25519 stanza).
    sealed = ChaCha20Poly1305(key).encrypt(b"\x00" * 12, data_key, context)
    return bytes((WRAP_VERSION,)) + ephemeral_raw + sealed


def unwrap(private: bytes, wrapped: bytes, context: bytes) -> bytes:
    wrapped = bytes(wrapped)
    if len(wrapped) != 1 + 32 + 48 or wrapped[0] != WRAP_VERSION:
        raise IntegrityError("the wrapped team key is malformed")
    identity = X25519PrivateKey.from_private_bytes(private)
    ephemeral_raw = wrapped[1:33]
    shared = identity.exchange(X25519PublicKey.from_public_bytes(ephemeral_raw))
    key = _wrap_key(shared, ephemeral_raw, _raw(identity.public_key()), context)
    try:
        return ChaCha20Poly1305(key).decrypt(b"\x00" * 12, wrapped[33:], context)
    except InvalidTag:
        raise IntegrityError(
            "the team key wrapped for you does not open (altered, or wrapped for another store)"
        ) from None


class TeamKeys:
    """This member's identity, and wrapping the team key to members (the cipher's ``team``)."""

    def __init__(self, settings: Any, state: Path, *, detach: bool = True) -> None:
        self.settings = settings
        self.state = state
        self.detach = detach
        self._private: bytes | None = None

    # --- the identity --------------------------------------------------------------------

    def _provider(self, create: bool) -> Any:
        """Where the identity is kept: as ``[storage] key`` says for the data key."""
        from ketch_crypto import keys
        from ketch_crypto.manager import PassphraseProvider

        wrapped = PassphraseProvider(
            self.state / IDENTITY_FILE, self.settings.cache_seconds, self.detach
        )
        setting = self.settings.provider
        if setting == "passphrase" or wrapped.exists():
            return wrapped
        if setting == "keyring" or not create:
            return None
        return None if keys.usable() is None else wrapped

    def private_key(self, create: bool = True) -> bytes:
        if self._private is not None:
            return self._private
        from ketch_crypto import keys

        provider = self._provider(create)
        if provider is not None:
            key = provider.load(create)
        else:
            key = keys.read_entry(IDENTITY_USER)
            if key is None:
                if not create:
                    raise KetchError(
                        "this machine has no team identity yet: `ketch store key identity` makes one and prints its public key"
                    )
                key = os.urandom(32)
                keys.write_entry(key, IDENTITY_USER)
        self._private = key
        return key

    def public_key(self, create: bool = True) -> str:
        private = X25519PrivateKey.from_private_bytes(self.private_key(create))
        return public_text(_raw(private.public_key()))

    def fingerprint(self, public: str | None = None) -> str:
        return fingerprint(public or self.public_key())

    # --- the team key ----------------------------------------------------------------------

    @staticmethod
    def mint() -> bytes:
        return os.urandom(32)

    @staticmethod
    def wrap(data_key: bytes, recipient: str, context: bytes) -> bytes:
        return wrap(data_key, recipient, context)

    def unwrap(self, wrapped: bytes, context: bytes) -> bytes:
        return unwrap(self.private_key(False), wrapped, context)
