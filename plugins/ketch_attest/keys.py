"""Signing keys people already have, and the public keys a receipt is checked against.

* **ketch's own key** (``--key ketch``, the default): an Ed25519 key derived from the
  session store's key (``Store.keyed_digest``: an HMAC under the store's lookup-index
  key), so it lives exactly where that key lives -- the OS keyring, or wrapped under
  your passphrase -- and is never written anywhere. It survives ``ketch store key
  rotate`` (the index key is carried over). ``ketch attest --public-key`` prints it.
* **an SSH key** (``--key ssh:PATH``, or ``--key git`` for git's ``user.signingkey``
  with ``gpg.format = ssh``): signed by ``ssh-keygen -Y sign`` in the SSHSIG format git
  uses for signed commits (namespace ``ketch-receipt``), so ``ssh-keygen -Y verify``
  checks it too; an agent or a passphrase prompt work as they do for git. The
  ``ssh-keygen`` on PATH runs, never a program a repository's config names.

A signature's ``keyid`` is informational: verification tries each trusted key on each
signature, by key material.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ketch.api import KetchError
from ketch_attest import sshsig

PURPOSE = "attest/ed25519-signing-key/v1"


class Signer(Protocol):
    @property
    def keyid(self) -> str: ...

    @property
    def description(self) -> str: ...

    def sign(self, message: bytes) -> bytes: ...


def raw_keyid(raw_public: bytes) -> str:
    """An Ed25519 key's id in receipts: the SHA-256 of its 32 raw bytes, hex."""
    return hashlib.sha256(raw_public).hexdigest()


# --- ketch's own key ----------------------------------------------------------------------


@dataclass
class KetchKey:
    private: Any  # Ed25519PrivateKey

    @classmethod
    def from_store(cls, store: Any) -> KetchKey:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        if store is None:
            raise KetchError(
                "no session store is loaded, and ketch's signing key lives with the store's key; "
                "use --key ssh:PATH (or --key git), or enable the 'store' plugin"
            )
        if getattr(store, "encrypted", True) is False:
            raise KetchError(
                'the session store is not encrypted (storage.encryption = "off"), so it has no key to derive '
                "ketch's signing key from; use --key ssh:PATH (or --key git)"
            )
        digest = getattr(store, "keyed_digest", None)
        if digest is None:
            raise KetchError(
                "the loaded session store cannot derive a signing key; use --key ssh:PATH"
            )
        seed = bytes.fromhex(digest(PURPOSE, "ed25519"))[:32]
        return cls(Ed25519PrivateKey.from_private_bytes(seed))

    @property
    def raw_public(self) -> bytes:
        from cryptography.hazmat.primitives import serialization

        return bytes(
            self.private.public_key().public_bytes(
                serialization.Encoding.Raw, serialization.PublicFormat.Raw
            )
        )

    @property
    def keyid(self) -> str:
        return raw_keyid(self.raw_public)

    @property
    def description(self) -> str:
        return f"ketch's key {self.keyid[:16]} (ed25519)"

    def sign(self, message: bytes) -> bytes:
        return bytes(self.private.sign(message))

    def public_pem(self) -> str:
        from cryptography.hazmat.primitives import serialization

        return (
            self.private.public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode("ascii")
        )

    def public_ssh(self) -> str:
        blob = sshsig.string(b"ssh-ed25519") + sshsig.string(self.raw_public)
        return f"ssh-ed25519 {base64.b64encode(blob).decode()} ketch-attest"


# --- SSH keys -------------------------------------------------------------------------------


def ssh_keygen() -> str:
    found = shutil.which("ssh-keygen")
    if found is None:
        raise KetchError(
            "ssh-keygen is not installed (it signs with SSH keys); install OpenSSH's client, or use --key ketch"
        )
    return found


@dataclass
class SshKey:
    """An SSH key file (private, or public with the private part in ssh-agent), or a
    literal public key (``key::ssh-ed25519 AAAA...``, as git's ``user.signingkey``)."""

    path: Path | None = None
    literal: str | None = None
    keyid: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        public = self._public_line()
        if public is not None:
            blob = _ssh_blob(public)
            if blob is not None:
                self.keyid = sshsig.fingerprint(blob)
        where = str(self.path) if self.path else "a literal key"
        self.description = f"SSH key {self.keyid or where}" + (f" ({where})" if self.path else "")

    def _public_line(self) -> str | None:
        if self.literal is not None:
            return self.literal
        assert self.path is not None
        for candidate in (self.path, Path(str(self.path) + ".pub")):
            try:
                text = candidate.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                continue
            if text.startswith(("ssh-", "ecdsa-", "sk-")):
                return text
        return None

    def sign(self, message: bytes) -> bytes:
        keygen = ssh_keygen()
        with tempfile.TemporaryDirectory(prefix="ketch-attest-") as scratch:
            if self.literal is not None:
                key = Path(scratch) / "key.pub"
                key.write_text(self.literal + "\n", encoding="utf-8")
                argv = [keygen, "-Y", "sign", "-n", sshsig.NAMESPACE, "-f", str(key), "-U"]
            else:
                assert self.path is not None
                if not self.path.exists():
                    raise KetchError(f"no SSH key at {self.path}")
                argv = [keygen, "-Y", "sign", "-n", sshsig.NAMESPACE, "-f", str(self.path)]
            try:
                done = subprocess.run(
                    argv,
                    input=message,
                    capture_output=True,
                    timeout=300,
                    env=_ssh_env(),
                    cwd=scratch,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise KetchError(f"ssh-keygen could not sign ({exc})") from None
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise KetchError(
                f"ssh-keygen could not sign with {self.description}: {said[-1] if said else f'exit {done.returncode}'}"
            )
        try:
            raw = sshsig.unarmor(done.stdout.decode("ascii", "replace"))
            parsed = sshsig.parse(raw)
        except (KetchError, ValueError) as exc:
            raise KetchError(f"ssh-keygen gave no SSH signature ({exc})") from None
        self.keyid = parsed.fingerprint
        return raw


def _ssh_env() -> dict[str, str]:
    """ssh-keygen's environment: the agent and the terminal, nothing else of ours."""
    keep = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "SSH_AUTH_SOCK", "DISPLAY")
    return {k: os.environ[k] for k in keep if k in os.environ}


def _ssh_blob(line: str) -> bytes | None:
    parts = line.split()
    if len(parts) < 2:
        return None
    try:
        return base64.b64decode(parts[1], validate=True)
    except ValueError:
        return None


def signer_for(spec: str, store_opener: Any, workspace: Path) -> Signer:
    """The signer ``--key SPEC`` names: ``ketch``, ``ssh:PATH``, ``ssh:key::LITERAL``, ``git``."""
    if spec == "ketch":
        return KetchKey.from_store(store_opener())
    if spec == "git":
        return git_signing_key(workspace)
    if spec.startswith("ssh:"):
        rest = spec[4:]
        if rest.startswith("key::"):
            return SshKey(literal=rest[5:].strip())
        if rest.startswith(("ssh-", "ecdsa-", "sk-")):
            return SshKey(literal=rest.strip())
        if not rest:
            raise KetchError(
                "--key ssh: needs a path, e.g. --key ssh:~/.ssh/id_ed25519", exit_code=2
            )
        return SshKey(path=Path(os.path.expanduser(rest)).absolute())
    raise KetchError(
        f"--key {spec!r}: expected 'ketch', 'ssh:PATH' or 'git' (git's user.signingkey)",
        exit_code=2,
    )


def git_signing_key(workspace: Path) -> SshKey:
    """git's ``user.signingkey`` when ``gpg.format`` is ``ssh`` (read by git's own config
    reader; no program the config names runs)."""
    from ketch_attest.gitrepo import config_value

    fmt = (config_value(workspace, "gpg.format") or "openpgp").lower()
    key = config_value(workspace, "user.signingkey")
    if not key:
        raise KetchError(
            "git has no user.signingkey; set one (git config user.signingkey ~/.ssh/id_ed25519.pub) or use --key ssh:PATH"
        )
    if fmt != "ssh":
        raise KetchError(
            f"git's signing key is for gpg.format = {fmt}; ketch signs with SSH keys (gpg.format = ssh) or its own"
        )
    if key.startswith("key::"):
        return SshKey(literal=key[5:].strip())
    if key.startswith(("ssh-", "ecdsa-", "sk-")):
        return SshKey(literal=key.strip())
    path = Path(os.path.expanduser(key))
    if not path.is_absolute():
        path = workspace / path
    return SshKey(path=path)


# --- trusted public keys (verification) -----------------------------------------------------------


@dataclass(frozen=True)
class Trusted:
    """A public key a signature may verify under: raw Ed25519 (ketch's key, a PEM), or
    an SSH key (a ``.pub`` line or an allowed_signers entry) for SSHSIG signatures."""

    name: str
    ed25519: bytes | None = None  # raw public key
    ssh_blob: bytes | None = None  # SSH wire encoding
    namespaces: tuple[str, ...] | None = None  # allowed_signers namespaces="..."

    def verifies(self, keyid: str, sig: bytes, message: bytes) -> tuple[str, str]:
        """("ok", ""), ("bad", what is wrong) when the signature is this key's and does
        not verify, or ("other", "") when it is not this key's."""
        if sshsig.looks_like(sig):
            parsed = sshsig.parse(sig)
            if self.ssh_blob is None or parsed.public_key != self.ssh_blob:
                return "other", ""
            if self.namespaces is not None and sshsig.NAMESPACE not in self.namespaces:
                return "bad", f"{self.name} may not sign namespace {sshsig.NAMESPACE}"
            problem = sshsig.verify(parsed, message)
            return ("ok", "") if problem is None else ("bad", problem)
        raw = self.ed25519
        if raw is None and self.ssh_blob is not None:
            raw = _ed25519_of_ssh(self.ssh_blob)
        if raw is None:
            return "other", ""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        try:
            Ed25519PublicKey.from_public_bytes(raw).verify(sig, message)
        except InvalidSignature:
            if keyid and keyid != raw_keyid(raw):
                return "other", ""
            return "bad", "the signature does not match (the receipt was changed after signing)"
        return "ok", ""


def _ed25519_of_ssh(blob: bytes) -> bytes | None:
    try:
        r = sshsig.Reader(blob)
        if r.string() != b"ssh-ed25519":
            return None
        return r.string()
    except ValueError:
        return None


def load_trusted(spec: str, store_opener: Any) -> list[Trusted]:
    """``--key`` for verify: ``ketch`` (this machine's store key), a PEM public key file,
    an SSH public key file or line, or an allowed_signers file."""
    if spec == "ketch":
        key = KetchKey.from_store(store_opener())
        return [Trusted(key.description, ed25519=key.raw_public)]
    literal = spec.strip()
    if literal.startswith(("ssh-", "ecdsa-", "sk-")) and not os.path.exists(literal):
        return _from_text(literal, "the given key")
    path = Path(os.path.expanduser(spec))
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KetchError(
            f"--key {spec}: cannot read it ({getattr(exc, 'strerror', None) or exc})", exit_code=2
        ) from None
    return _from_text(text, str(path))


def _from_text(text: str, where: str) -> list[Trusted]:
    if "-----BEGIN PUBLIC KEY-----" in text:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        try:
            public = serialization.load_pem_public_key(text.encode())
        except ValueError as exc:
            raise KetchError(f"{where}: not a PEM public key ({exc})", exit_code=2) from None
        if not isinstance(public, Ed25519PublicKey):
            raise KetchError(f"{where}: ketch keys are Ed25519; this is another kind", exit_code=2)
        raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return [Trusted(f"key {raw_keyid(raw)[:16]} ({where})", ed25519=raw)]
    found: list[Trusted] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        entry = _signer_line(line)
        if entry is None:
            raise KetchError(
                f"{where}:{number}: not an SSH public key or allowed_signers line", exit_code=2
            )
        name, blob, namespaces = entry
        found.append(
            Trusted(f"{name} {sshsig.fingerprint(blob)}", ssh_blob=blob, namespaces=namespaces)
        )
    if not found:
        raise KetchError(f"{where}: no key in it", exit_code=2)
    return found


def _signer_line(line: str) -> tuple[str, bytes, tuple[str, ...] | None] | None:
    """A ``.pub`` line (type key comment) or an allowed_signers line
    (principals [options] type key [comment])."""
    words = _split_options(line)
    for index, word in enumerate(words[:-1]):
        if word.startswith(("ssh-", "ecdsa-", "sk-")):
            blob = _ssh_blob(f"{word} {words[index + 1]}")
            if blob is None:
                return None
            namespaces: tuple[str, ...] | None = None
            found = re.search(r'namespaces="([^"]*)"', " ".join(words[1:index]), re.IGNORECASE)
            if found is not None:
                namespaces = tuple(n.strip() for n in found.group(1).split(","))
            name = words[0] if index else "SSH key"
            return name, blob, namespaces
    return None


def _split_options(line: str) -> list[str]:
    """Whitespace-split, keeping double-quoted option values whole."""
    words, current, quoted = [], "", False
    for char in line:
        if char == '"':
            quoted = not quoted
            current += char
        elif char.isspace() and not quoted:
            if current:
                words.append(current)
            current = ""
        else:
            current += char
    if current:
        words.append(current)
    return words
