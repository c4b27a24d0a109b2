"""How the store turns fields into column values: through the cipher, or in the open.

Every sensitive field goes through :class:`Fields`, which builds the associated data
from the record's identity (table, column, key) and the record format version, so a
value is only readable in the place it was written.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from typing import Any

from ketch.api import FieldCipher, IntegrityError

RECORD_FORMAT = 1  # the layout of encrypted records; bound into every field's AAD
PLAIN_TAG = b"\x00"


class PlainCodec:
    """``storage.encryption = "off"``: fields stored as they are, tagged as plaintext.

    The lookup index is an unkeyed SHA-256 (there is no key); workspace paths are in
    the open anyway in this mode.
    """

    algorithm = "none"

    def encrypt(self, plaintext: bytes, aad: bytes) -> bytes:
        return PLAIN_TAG + plaintext

    def decrypt(self, envelope: bytes, aad: bytes) -> bytes:
        envelope = bytes(envelope)
        if not envelope.startswith(PLAIN_TAG):
            raise IntegrityError(
                'this field is encrypted, but the store is running with storage.encryption = "off"'
            )
        return envelope[1:]

    def index(self, value: str) -> str:
        return hashlib.sha256(value.encode("utf-8")).hexdigest()


def _aad(table: str, column: str, key: str) -> bytes:
    return f"ketch/record-v{RECORD_FORMAT}/{table}/{column}/{key}".encode()


class Fields:
    """Encrypt and decrypt one column of one record; JSON for structured values."""

    def __init__(self, cipher: FieldCipher) -> None:
        self.cipher = cipher
        self.encrypted = not isinstance(cipher, PlainCodec)

    def seal(self, table: str, column: str, key: str, data: bytes) -> bytes:
        return self.cipher.encrypt(data, _aad(table, column, key))

    def open(self, table: str, column: str, key: str, value: bytes) -> bytes:
        try:
            return self.cipher.decrypt(value, _aad(table, column, key))
        except IntegrityError as exc:
            raise IntegrityError(f"{table}.{column} of {key}: {exc}") from None

    def seal_text(self, table: str, column: str, key: str, text: str) -> bytes:
        return self.seal(table, column, key, text.encode("utf-8"))

    def open_text(self, table: str, column: str, key: str, value: bytes | None) -> str:
        if value is None:
            return ""
        return self.open(table, column, key, value).decode("utf-8")

    def seal_json(self, table: str, column: str, key: str, data: Any) -> bytes:
        return self.seal(table, column, key, dumps(data))

    def open_json(self, table: str, column: str, key: str, value: bytes) -> Any:
        return json.loads(self.open(table, column, key, value))

    def index(self, value: str) -> str:
        return self.cipher.index(value)

    def mac(self, purpose: str, data: bytes) -> bytes:
        """A keyed MAC under a subkey of the data key; unkeyed SHA-256 in plaintext mode
        (which catches accidents, not tampering: there is no key)."""
        keyed = getattr(self.cipher, "mac", None)
        if callable(keyed):
            return bytes(keyed(purpose, data))
        return hashlib.sha256(purpose.encode() + b"\x00" + data).digest()

    def mac_for(self, purpose: str) -> Callable[[bytes], bytes]:
        """:meth:`mac` for one purpose, its key looked up once (the journal's hot loop)."""
        subkey = getattr(self.cipher, "mac_key", None)
        if callable(subkey):
            key = bytes(subkey(purpose))
            return lambda data: hmac.digest(key, data, "sha256")
        return lambda data: self.mac(purpose, data)

    def opens(self, table: str, column: str, key: str, value: bytes) -> bool:
        try:
            self.cipher.decrypt(value, _aad(table, column, key))
        except IntegrityError:
            return False
        return True


def dumps(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8")
