"""The data key wrapped under a passphrase: the ``sessions.key`` file beside the database.

::

    {"format": "ketch-wrapped-key", "version": 1, "created": 1730000000.0,
     "kdf": {"name": "argon2id", "memory_kib": 65536, "iterations": 3, "lanes": 4, "salt": "<base64>"},
     "wrap": {"algorithm": "AES-256-GCM", "nonce": "<base64>", "ciphertext": "<base64>"}}

The key-encryption key (KEK) is Argon2id (RFC 9106's second recommendation: 64 MiB,
3 passes, 4 lanes) of the passphrase and a random 16-byte salt; scrypt (N=2^17, r=8,
p=1) where the OpenSSL under ``cryptography`` has no Argon2. The data key is sealed
under the KEK with AES-256-GCM, and everything above the ``wrap`` record (format,
version, creation time, KDF name, parameters and salt) is its associated data, so the
parameters cannot be weakened or swapped without the unwrap failing. The file holds
nothing usable without the passphrase.

A wrong passphrase and an altered file are the same event to AES-GCM; both are reported
as :class:`WrongPassphrase` (it names itself: it is never an "integrity error").
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag, UnsupportedAlgorithm
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ketch.api import RecoveryLocked, StoreUnavailable

FORMAT = "ketch-wrapped-key"
VERSION = 1
SALT_BYTES = 16

ARGON2ID_DEFAULT: dict[str, int] = {"memory_kib": 65536, "iterations": 3, "lanes": 4}
SCRYPT_DEFAULT: dict[str, int] = {"n": 2**17, "r": 8, "p": 1}
# What a file may ask for: below, it is not a KDF worth the name; above, a hostile file
# could make every start take minutes or gigabytes.
_BOUNDS: dict[str, dict[str, tuple[int, int]]] = {
    "argon2id": {"memory_kib": (8192, 4 * 1024 * 1024), "iterations": (1, 64), "lanes": (1, 64)},
    "scrypt": {"n": (2**14, 2**22), "r": (1, 32), "p": (1, 16)},
}


class WrongPassphrase(StoreUnavailable):
    """The passphrase does not unwrap the data key."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exists=True)


@dataclass(frozen=True)
class Kdf:
    name: str
    params: dict[str, int]
    salt: bytes

    def record(self) -> dict[str, Any]:
        return {
            "name": self.name,
            **self.params,
            "salt": base64.b64encode(self.salt).decode("ascii"),
        }

    def derive(self, passphrase: str) -> bytes:
        secret = passphrase.encode("utf-8")
        if self.name == "argon2id":
            from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

            p = self.params
            return Argon2id(
                salt=self.salt,
                length=32,
                iterations=p["iterations"],
                lanes=p["lanes"],
                memory_cost=p["memory_kib"],
            ).derive(secret)
        from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

        p = self.params
        return Scrypt(salt=self.salt, length=32, n=p["n"], r=p["r"], p=p["p"]).derive(secret)

    def describe(self) -> str:
        if self.name == "argon2id":
            return f"Argon2id, {self.params['memory_kib'] // 1024} MiB, {self.params['iterations']} passes, {self.params['lanes']} lanes"
        return f"scrypt, N=2^{self.params['n'].bit_length() - 1}, r={self.params['r']}, p={self.params['p']}"


def default_kdf(salt: bytes | None = None) -> Kdf:
    """The KDF new wrapped-key files use: Argon2id, or scrypt where there is no Argon2."""
    salt = salt or os.urandom(SALT_BYTES)
    if _argon2_available():
        return Kdf("argon2id", dict(ARGON2ID_DEFAULT), salt)
    return Kdf("scrypt", dict(SCRYPT_DEFAULT), salt)


_ARGON2: bool | None = None


def _argon2_available() -> bool:
    global _ARGON2
    if _ARGON2 is None:
        try:
            from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

            Argon2id(salt=b"\0" * 16, length=32, iterations=1, lanes=1, memory_cost=8).derive(
                b"probe"
            )
            _ARGON2 = True
        except (ImportError, UnsupportedAlgorithm):
            _ARGON2 = False
    return _ARGON2


@dataclass(frozen=True)
class WrappedKey:
    kdf: Kdf
    nonce: bytes
    ciphertext: bytes
    created: float = field(default_factory=time.time)

    def header(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "created": self.created,
            "kdf": self.kdf.record(),
        }

    def aad(self) -> bytes:
        return json.dumps(self.header(), sort_keys=True, separators=(",", ":")).encode("utf-8")

    def to_json(self) -> str:
        wrap = {
            "algorithm": "AES-256-GCM",
            "nonce": _b64(self.nonce),
            "ciphertext": _b64(self.ciphertext),
        }
        return json.dumps({**self.header(), "wrap": wrap}, indent=1, sort_keys=True) + "\n"

    def unwrap(self, kek: bytes, where: Path) -> bytes:
        try:
            key = AESGCM(kek).decrypt(self.nonce, self.ciphertext, self.aad())
        except InvalidTag:
            raise WrongPassphrase(
                f"wrong passphrase for the session store: it does not unwrap the key in {where} "
                "(nothing was read or written). Type it again, or set KETCH_PASSPHRASE to the right one; "
                "a recovery code from `ketch store key export` can be restored with `ketch store key import`."
            ) from None
        if len(key) != 32:
            raise RecoveryLocked(
                f"{where} holds a malformed key; restore it from a recovery code (`ketch store key import`)"
            )
        return key

    def rewrapped(self, key: bytes, kek: bytes) -> WrappedKey:
        """The same KDF and salt (so the same KEK), another key: how a rotation is staged."""
        return seal(key, kek, self.kdf)


def seal(key: bytes, kek: bytes, kdf: Kdf, created: float | None = None) -> WrappedKey:
    nonce = os.urandom(12)
    draft = WrappedKey(
        kdf=kdf, nonce=nonce, ciphertext=b"", created=time.time() if created is None else created
    )
    return WrappedKey(
        kdf=kdf,
        nonce=nonce,
        ciphertext=AESGCM(kek).encrypt(nonce, key, draft.aad()),
        created=draft.created,
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(value: Any, what: str, where: Path) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except (ValueError, TypeError):
        raise RecoveryLocked(
            f"{where} is damaged ({what} is not base64); restore it from a recovery code (`ketch store key import`)"
        ) from None


def parse(text: str, where: Path) -> WrappedKey:
    """A wrapped key from the file's text; a file that is not one is ``RecoveryLocked``."""
    damaged = f"{where} is not a ketch wrapped-key file (or is damaged); restore it from a recovery code (`ketch store key import`)"
    try:
        data = json.loads(text)
    except ValueError:
        raise RecoveryLocked(damaged) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise RecoveryLocked(damaged)
    if data.get("version") != VERSION:
        raise RecoveryLocked(
            f"{where} was written by another ketch (wrapped-key version {data.get('version')!r}); upgrade ketch to open it"
        )
    kdf, wrap = data.get("kdf"), data.get("wrap")
    if (
        not isinstance(kdf, dict)
        or not isinstance(wrap, dict)
        or not isinstance(data.get("created"), (int, float))
    ):
        raise RecoveryLocked(damaged)
    name = kdf.get("name")
    bounds = _BOUNDS.get(str(name))
    if bounds is None:
        raise RecoveryLocked(f"{where} uses an unknown key-derivation function {name!r}")
    params: dict[str, int] = {}
    for key, (low, high) in bounds.items():
        value = kdf.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise RecoveryLocked(
                f"{where}: the {name} parameter {key} = {value!r} is outside {low}..{high}; refusing to use it"
            )
        params[key] = value
    if name == "scrypt" and params["n"] & (params["n"] - 1):
        raise RecoveryLocked(f"{where}: the scrypt parameter n must be a power of two")
    salt = _unb64(kdf.get("salt"), "the salt", where)
    if len(salt) < 16:
        raise RecoveryLocked(f"{where}: the salt is too short")
    return WrappedKey(
        kdf=Kdf(str(name), params, salt),
        nonce=_unb64(wrap.get("nonce"), "the nonce", where),
        ciphertext=_unb64(wrap.get("ciphertext"), "the wrapped key", where),
        created=float(data["created"]),
    )


def read(path: Path) -> WrappedKey | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RecoveryLocked(f"cannot read {path}: {exc.strerror or exc}") from None
    return parse(text, path)


def write(path: Path, wrapped: WrappedKey) -> None:
    """Atomically (temporary file, fsync, rename, fsync of the directory), owner-only."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(wrapped.to_json())
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    sync_directory(path.parent)


def sync_directory(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
