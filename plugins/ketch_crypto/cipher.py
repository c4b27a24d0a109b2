"""AES-256-GCM field encryption with a versioned envelope.

Envelope (version 1)::

    0x01 | key id (4 bytes) | nonce (12 bytes) | ciphertext + tag (16 bytes)

The header (version and key id), the algorithm name and the caller's associated data
(record identity + schema version, chosen by the store) are all bound as AES-GCM
associated data, so a ciphertext moved to another row or column, relabelled, cut short
or decrypted under another key fails authentication. Every write draws a fresh random
12-byte nonce (NIST SP 800-38D allows 2**32 random-nonce encryptions per key; a
session store stays many orders of magnitude below that).

Keys: one 32-byte data key; the encryption key, the key id, the lookup-index key (of
a new store) and the MAC keys (one per purpose, e.g. the journal chain) are derived
from it with HKDF-SHA-256 under distinct labels, so no key is used for two purposes. A
store keeps its lookup-index key sealed and sets it back after a rotation.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ketch.api import IntegrityError

ALGORITHM = "AES-256-GCM"
ENVELOPE_VERSION = 1
KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
KEY_ID_BYTES = 4
HEADER_BYTES = 1 + KEY_ID_BYTES
MIN_ENVELOPE = HEADER_BYTES + NONCE_BYTES + TAG_BYTES
_ALGORITHM_LABEL = b"|" + ALGORITHM.encode() + b"|"


def derive(data_key: bytes, label: str) -> bytes:
    """A 32-byte subkey of ``data_key`` for one purpose (HKDF-SHA-256)."""
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=label.encode()).derive(
        data_key
    )


class DerivedKeys:
    """The subkeys of one data key.

    The lookup-index key starts as a subkey of the data key; a store keeps it (sealed)
    and sets it back after a rotation (:meth:`AesGcmFieldCipher.set_index_key`), so
    indexes stay valid while everything that is encrypted moves to the new key.
    """

    def __init__(self, data_key: bytes) -> None:
        if len(data_key) != KEY_BYTES:
            raise ValueError(f"a data key is {KEY_BYTES} bytes, not {len(data_key)}")
        self._data_key = data_key
        self.aead = AESGCM(derive(data_key, "ketch/field-encryption/v1"))
        self.index_key = derive(data_key, "ketch/lookup-index/v1")
        self.key_id = derive(data_key, "ketch/key-id/v1")[:KEY_ID_BYTES]
        self._macs: dict[str, bytes] = {}

    def mac_key(self, purpose: str) -> bytes:
        key = self._macs.get(purpose)
        if key is None:
            key = self._macs[purpose] = derive(self._data_key, f"ketch/mac/{purpose}/v1")
        return key


class AesGcmFieldCipher:
    """A :class:`ketch.storage.FieldCipher`; the key comes from ``load_keys`` on first use.

    ``load_keys(create)`` returns the derived keys, minting a data key only when
    ``create`` is true. Encrypting may mint (the first write of a new store); decrypting
    never does: data that exists was written under a key that must already exist.
    The store calls :meth:`unlock` while it opens, to decide that explicitly.

    ``manager`` (a :class:`ketch_crypto.manager.KeyManager`) is where the key lives; the
    store's key commands (status, rotate, export, ...) work through it.
    """

    algorithm = ALGORITHM

    def __init__(self, load_keys: Callable[[bool], DerivedKeys], manager: Any = None) -> None:
        self._load_keys = load_keys
        self._keys: DerivedKeys | None = None
        self._index_key: bytes | None = None
        self.manager = manager

    @classmethod
    def from_key(cls, data_key: bytes, manager: Any = None) -> AesGcmFieldCipher:
        """A cipher over a key already in hand (tests, tools, benchmarks, rotation)."""
        keys = DerivedKeys(data_key)
        cipher = cls(lambda create: keys, manager)
        cipher._keys = keys
        return cipher

    def with_key(self, data_key: bytes) -> AesGcmFieldCipher:
        """A cipher for another data key that keeps this one's lookup-index key."""
        other = AesGcmFieldCipher.from_key(data_key, self.manager)
        other._index_key = (
            self._get(False).index_key if self._index_key is None else self._index_key
        )
        return other

    def bind(self, database: Path, recorded: str | None = None) -> None:
        """The store says where its database is (the wrapped-key file lives beside it) and
        which provider it recorded when it was made."""
        if self.manager is not None:
            self.manager.bind(database, recorded)

    @property
    def team(self) -> Any:
        """This member's identity and team-key wrapping (:class:`ketch_crypto.team.TeamKeys`),
        for a store shared by a team; None without a key manager."""
        if self.manager is None:
            return None
        found = getattr(self, "_team", None)
        if found is None:
            from ketch_crypto.team import TeamKeys

            found = self._team = TeamKeys(
                self.manager.settings,
                self.manager.database.parent,
                detach=self.manager.passphrase.detach,
            )
        return found

    def for_key(self, data_key: bytes) -> AesGcmFieldCipher:
        """A cipher over another data key (a team's), with its own lookup-index key."""
        return AesGcmFieldCipher.from_key(data_key)

    def key_file_beside(self) -> Path | None:
        """The key file kept beside the bound database, if there is one (an empty
        database beside it is a truncated store, not a new one)."""
        if self.manager is None:
            return None
        path: Path = self.manager.passphrase.path
        return path if path.exists() else None

    def unlock(self, *, create: bool) -> None:
        """Load the key now; with ``create``, mint one if the keyring has none."""
        if self._keys is None:
            self._keys = self._load_keys(create)

    def _get(self, create: bool) -> DerivedKeys:
        if self._keys is None:
            self._keys = self._load_keys(create)
        return self._keys

    @property
    def key_id(self) -> str:
        return self._get(False).key_id.hex()

    def data_key(self) -> bytes:
        """The raw data key, for a recovery code the user asked for (never stored by ketch)."""
        return self._get(False)._data_key

    def index_key(self) -> bytes:
        return self._index_key if self._index_key is not None else self._get(False).index_key

    def set_index_key(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise IntegrityError("the stored lookup-index key is malformed")
        self._index_key = key

    def encrypt(self, plaintext: bytes, aad: bytes) -> bytes:
        keys = self._get(True)
        header = bytes((ENVELOPE_VERSION,)) + keys.key_id
        nonce = os.urandom(NONCE_BYTES)
        return header + nonce + keys.aead.encrypt(nonce, plaintext, header + _ALGORITHM_LABEL + aad)

    def decrypt(self, envelope: bytes, aad: bytes) -> bytes:
        envelope = bytes(envelope)
        if len(envelope) < MIN_ENVELOPE:
            raise IntegrityError(
                f"encrypted field is truncated ({len(envelope)} bytes; an envelope has at least {MIN_ENVELOPE})"
            )
        if envelope[0] != ENVELOPE_VERSION:
            raise IntegrityError(
                f"encrypted field has an unknown envelope version {envelope[0]} (expected {ENVELOPE_VERSION}): tampered or not encrypted"
            )
        keys = self._get(False)
        header = envelope[:HEADER_BYTES]
        if not hmac.compare_digest(header[1:], keys.key_id):
            raise IntegrityError(
                "encrypted field was written under a different key (or its header was tampered with)"
            )
        nonce = envelope[HEADER_BYTES : HEADER_BYTES + NONCE_BYTES]
        try:
            return keys.aead.decrypt(
                nonce, envelope[HEADER_BYTES + NONCE_BYTES :], header + _ALGORITHM_LABEL + aad
            )
        except InvalidTag:
            raise IntegrityError(
                "encrypted field failed authentication (tampered, moved from another record, or the wrong key)"
            ) from None

    def index(self, value: str) -> str:
        key = self._index_key if self._index_key is not None else self._get(True).index_key
        return hmac.new(key, value.encode("utf-8"), hashlib.sha256).hexdigest()

    def mac(self, purpose: str, data: bytes) -> bytes:
        """HMAC-SHA-256 of ``data`` under a subkey of the data key kept for ``purpose``."""
        return hmac.digest(self.mac_key(purpose), data, "sha256")

    def mac_key(self, purpose: str) -> bytes:
        return self._get(True).mac_key(purpose)
