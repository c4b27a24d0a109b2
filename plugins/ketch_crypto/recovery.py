"""Recovery codes: the data key written so a person can keep it on paper.

``KETCH1-`` and the base32 of the 32-byte key plus a 4-byte checksum (SHA-256), in
groups of five. Reading ignores case, spaces, line breaks and dashes, and a mistyped
code fails the checksum instead of turning into a wrong key.
"""

from __future__ import annotations

import base64
import hashlib
import re

from ketch.api import KetchError

PREFIX = "KETCH1"
_CHECK = 4


def encode(key: bytes) -> str:
    body = base64.b32encode(key + hashlib.sha256(key).digest()[:_CHECK]).decode("ascii").rstrip("=")
    groups = [body[i : i + 5] for i in range(0, len(body), 5)]
    return "-".join([PREFIX, *groups])


def decode(text: str) -> bytes:
    cleaned = re.sub(r"[\s-]+", "", text).upper()
    if not cleaned.startswith(PREFIX):
        raise KetchError("that is not a ketch recovery code (it starts with KETCH1-)", exit_code=2)
    body = cleaned[len(PREFIX) :]
    try:
        raw = base64.b32decode(body + "=" * (-len(body) % 8))
    except ValueError:
        raise KetchError(
            "the recovery code has characters that are not in it (letters A-Z and digits 2-7); check it",
            exit_code=2,
        ) from None
    key, check = raw[:-_CHECK], raw[-_CHECK:]
    if len(key) != 32 or hashlib.sha256(key).digest()[:_CHECK] != check:
        raise KetchError(
            "the recovery code does not check out (a character is wrong or missing); check it",
            exit_code=2,
        )
    return key
