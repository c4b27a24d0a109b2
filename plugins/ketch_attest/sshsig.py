"""OpenSSH signatures (PROTOCOL.sshsig), the format ``ssh-keygen -Y sign`` and git's SSH
commit signing use: parsed and verified here with ``cryptography``, never by running a
program. Ed25519, ECDSA (P-256/384/521) and RSA (rsa-sha2-256/512) keys."""

from __future__ import annotations

import base64
import hashlib
import struct
from dataclasses import dataclass

from ketch.api import KetchError

MAGIC = b"SSHSIG"
NAMESPACE = "ketch-receipt"
ARMOR_BEGIN = "-----BEGIN SSH SIGNATURE-----"
ARMOR_END = "-----END SSH SIGNATURE-----"
_HASHES = {"sha256": hashlib.sha256, "sha512": hashlib.sha512}


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.at + n > len(self.data):
            raise ValueError("truncated")
        chunk = self.data[self.at : self.at + n]
        self.at += n
        return chunk

    def uint32(self) -> int:
        return int(struct.unpack(">I", self.take(4))[0])

    def string(self) -> bytes:
        return self.take(self.uint32())

    def done(self) -> bool:
        return self.at == len(self.data)


def string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


@dataclass(frozen=True)
class SshSig:
    public_key: bytes  # the SSH wire encoding of the signer's public key
    namespace: str
    hash_algorithm: str
    signature: bytes  # the SSH signature blob: string format, string signature

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public_key)


def fingerprint(blob: bytes) -> str:
    """OpenSSH's ``SHA256:...`` fingerprint of a wire-encoded public key."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def looks_like(data: bytes) -> bool:
    return data.startswith(MAGIC)


def parse(data: bytes) -> SshSig:
    try:
        r = Reader(data)
        if r.take(6) != MAGIC:
            raise ValueError("not an SSH signature")
        version = r.uint32()
        if version != 1:
            raise ValueError(f"SSH signature version {version}")
        key, namespace, _reserved, algo, sig = (
            r.string(),
            r.string(),
            r.string(),
            r.string(),
            r.string(),
        )
        if not r.done():
            raise ValueError("trailing bytes")
        return SshSig(key, namespace.decode("utf-8"), algo.decode("ascii"), sig)
    except (ValueError, UnicodeDecodeError) as exc:
        raise KetchError(f"an SSH signature that cannot be read ({exc})") from None


def armor(data: bytes) -> str:
    text = base64.b64encode(data).decode("ascii")
    lines = [text[i : i + 70] for i in range(0, len(text), 70)]
    return "\n".join([ARMOR_BEGIN, *lines, ARMOR_END]) + "\n"


def unarmor(text: str) -> bytes:
    body = text.strip()
    if not body.startswith(ARMOR_BEGIN) or not body.endswith(ARMOR_END):
        raise KetchError("not an armored SSH signature")
    inner = body[len(ARMOR_BEGIN) : -len(ARMOR_END)]
    return base64.b64decode("".join(inner.split()))


def signed_data(namespace: str, hash_algorithm: str, message: bytes) -> bytes:
    digest = _HASHES[hash_algorithm](message).digest()
    return (
        MAGIC
        + string(namespace.encode())
        + string(b"")
        + string(hash_algorithm.encode())
        + string(digest)
    )


def verify(sig: SshSig, message: bytes, namespace: str = NAMESPACE) -> str | None:
    """None when ``sig`` is a valid signature of ``message`` in ``namespace`` by the key
    it names; else what is wrong (one line)."""
    if sig.namespace != namespace:
        return f"it was made for namespace {sig.namespace!r}, not {namespace!r}"
    if sig.hash_algorithm not in _HASHES:
        return f"unknown hash algorithm {sig.hash_algorithm!r}"
    try:
        r = Reader(sig.signature)
        kind, raw = r.string().decode("ascii"), r.string()
    except (ValueError, UnicodeDecodeError):
        return "its signature blob cannot be read"
    data = signed_data(namespace, sig.hash_algorithm, message)
    return _check(sig.public_key, kind, raw, data)


def _check(key_blob: bytes, kind: str, raw: bytes, data: bytes) -> str | None:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa, utils
    from cryptography.hazmat.primitives.serialization import load_ssh_public_key

    try:
        key_type = Reader(key_blob).string().decode("ascii")
        public = load_ssh_public_key(f"{key_type} {base64.b64encode(key_blob).decode()}".encode())
    except (ValueError, UnicodeDecodeError):
        return "its public key cannot be read"
    try:
        if isinstance(public, ed25519.Ed25519PublicKey) and kind == "ssh-ed25519":
            public.verify(raw, data)
        elif isinstance(public, rsa.RSAPublicKey) and kind in ("rsa-sha2-256", "rsa-sha2-512"):
            algo = hashes.SHA256() if kind == "rsa-sha2-256" else hashes.SHA512()
            public.verify(raw, data, padding.PKCS1v15(), algo)
        elif isinstance(public, ec.EllipticCurvePublicKey) and kind.startswith("ecdsa-sha2-"):
            bits = public.curve.key_size
            algo_ec = (
                hashes.SHA256()
                if bits <= 256
                else hashes.SHA384()
                if bits <= 384
                else hashes.SHA512()
            )
            r = Reader(raw)
            der = utils.encode_dss_signature(
                int.from_bytes(r.string(), "big"), int.from_bytes(r.string(), "big")
            )
            public.verify(der, data, ec.ECDSA(algo_ec))
        else:
            return f"a {kind} signature by a {key_type} key is not supported"
    except InvalidSignature:
        return "the signature does not match (the receipt was changed after signing)"
    except ValueError as exc:
        return f"the signature cannot be read ({exc})"
    return None
