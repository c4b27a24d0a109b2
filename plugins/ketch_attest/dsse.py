"""DSSE envelopes (https://github.com/secure-systems-lab/dsse, v1.0) around in-toto Statements.

The signature covers the pre-authentication encoding (PAE) of the payload type and the
payload bytes, never the JSON of the envelope, so an envelope can be re-indented
without breaking it, and nothing in it is signed twice.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

from ketch.api import KetchError

PAYLOAD_TYPE = "application/vnd.in-toto+json"


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSEv1 SP LEN(type) SP type SP LEN(body) SP body (lengths in ASCII decimal)."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


@dataclass(frozen=True)
class Signature:
    keyid: str
    sig: bytes


@dataclass
class Envelope:
    payload: bytes
    payload_type: str = PAYLOAD_TYPE
    signatures: list[Signature] = field(default_factory=list)

    def pae(self) -> bytes:
        return pae(self.payload_type, self.payload)

    def to_json(self) -> str:
        return (
            json.dumps(
                {
                    "payloadType": self.payload_type,
                    "payload": base64.b64encode(self.payload).decode("ascii"),
                    "signatures": [
                        {"keyid": s.keyid, "sig": base64.b64encode(s.sig).decode("ascii")}
                        for s in self.signatures
                    ],
                },
                indent=2,
            )
            + "\n"
        )

    def statement(self) -> dict[str, Any]:
        try:
            data = json.loads(self.payload)
        except ValueError as exc:
            raise KetchError(f"the receipt's payload is not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise KetchError("the receipt's payload is not a JSON object")
        return data


def parse(text: str | bytes, where: str = "the receipt") -> Envelope:
    """An envelope from its JSON; a :class:`KetchError` naming what is wrong otherwise."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise KetchError(f"{where} is not a DSSE envelope: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise KetchError(f"{where} is not a DSSE envelope: not a JSON object")
    kind, payload, signatures = data.get("payloadType"), data.get("payload"), data.get("signatures")
    if (
        not isinstance(kind, str)
        or not isinstance(payload, str)
        or not isinstance(signatures, list)
    ):
        raise KetchError(
            f"{where} is not a DSSE envelope: it needs payloadType, payload and signatures"
        )
    try:
        body = base64.b64decode(payload, validate=True)
        sigs = [
            Signature(str(s.get("keyid", "")), base64.b64decode(str(s["sig"]), validate=True))
            for s in signatures
            if isinstance(s, dict)
        ]
    except (KeyError, ValueError, binascii.Error) as exc:
        raise KetchError(f"{where} is not a DSSE envelope: bad base64 ({exc})") from None
    if len(sigs) != len(signatures):
        raise KetchError(f"{where} is not a DSSE envelope: a signature is not an object")
    return Envelope(body, kind, sigs)
