"""Receipts signed with the person's SSH key (the SSHSIG format git signs commits with):
``ssh-keygen -Y verify`` accepts them as well as ``ketch verify``; git's
``user.signingkey`` is used with ``--key git``, and git's own signing program (which a
repository's config could name) never runs."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.attest.kit import (
    GIT,
    env_for,
    envelope,
    ketch,
    make_workspace,
    needs_git,
    needs_ssh_keygen,
    pae,
)

pytestmark = [needs_git, needs_ssh_keygen, pytest.mark.slow]


def _session(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    ws = make_workspace(tmp_path)
    script = [
        {"tool_calls": [{"name": "write_file", "input": {"path": "new.txt", "content": "hi\n"}}]},
        {"text": "ok"},
    ]
    env = env_for(tmp_path, script)
    done = ketch("-p", "write", "--provider", "scripted", "--profile", "assisted", cwd=ws, env=env)
    assert done.returncode == 0, done.stderr
    return ws, env


def _keypair(tmp_path: Path, name: str = "id_ed25519") -> Path:
    key = tmp_path / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dev@example.com", "-f", str(key)],
        check=True,
    )
    return key


def _ssh_verify(
    tmp_path: Path, receipt: Path, allowed: Path, identity: str
) -> subprocess.CompletedProcess[bytes]:
    data: dict[str, Any] = envelope(receipt)
    sig = base64.b64encode(base64.b64decode(data["signatures"][0]["sig"])).decode()
    armored = "\n".join(
        [
            "-----BEGIN SSH SIGNATURE-----",
            *[sig[i : i + 70] for i in range(0, len(sig), 70)],
            "-----END SSH SIGNATURE-----",
            "",
        ]
    )
    (tmp_path / "receipt.sig").write_text(armored)
    return subprocess.run(
        [
            "ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", identity,
            "-n", "ketch-receipt", "-s", str(tmp_path / "receipt.sig"),
        ],
        input=pae(data),
        capture_output=True,
    )  # fmt: skip


def test_an_ssh_signed_receipt_verifies_with_ssh_keygen_and_ketch(tmp_path: Path) -> None:
    ws, env = _session(tmp_path)
    key = _keypair(tmp_path)
    receipt = tmp_path / "receipt.json"
    done = ketch("attest", "--key", f"ssh:{key}", "--out", str(receipt), cwd=ws, env=env)
    assert done.returncode == 0, done.stderr
    public = (tmp_path / "id_ed25519.pub").read_text().split()
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f'dev@example.com namespaces="git,ketch-receipt" {public[0]} {public[1]}\n')
    checked = _ssh_verify(tmp_path, receipt, allowed, "dev@example.com")
    assert checked.returncode == 0, checked.stderr
    assert b'Good "ketch-receipt" signature for dev@example.com' in checked.stdout + checked.stderr
    for trusted in (allowed, tmp_path / "id_ed25519.pub"):
        verified = ketch(
            "verify", str(receipt), "--key", str(trusted), "--no-store", cwd=ws, env=env
        )
        assert verified.returncode == 0, verified.stdout
        assert "ok: signature: verified by" in verified.stdout and "SHA256:" in verified.stdout
    # Another person's key: ssh-keygen and ketch both refuse.
    other = _keypair(tmp_path, "other")
    other_public = Path(f"{other}.pub").read_text().split()
    stranger = tmp_path / "stranger_signers"
    stranger.write_text(f"dev@example.com {other_public[0]} {other_public[1]}\n")
    assert _ssh_verify(tmp_path, receipt, stranger, "dev@example.com").returncode != 0
    refused = ketch("verify", str(receipt), "--key", str(stranger), "--no-store", cwd=ws, env=env)
    assert refused.returncode == 1
    assert "FAILED: signature: the receipt is signed by SSH key SHA256:" in refused.stdout
    # A namespace the allowed_signers entry does not grant: refused, saying so.
    narrow = tmp_path / "narrow_signers"
    narrow.write_text(f'dev@example.com namespaces="git" {public[0]} {public[1]}\n')
    refused = ketch("verify", str(receipt), "--key", str(narrow), "--no-store", cwd=ws, env=env)
    assert refused.returncode == 1 and "may not sign namespace ketch-receipt" in refused.stdout


def test_key_git_signs_with_user_signingkey_and_runs_no_configured_program(tmp_path: Path) -> None:
    ws, env = _session(tmp_path)
    key = _keypair(tmp_path)
    canary = tmp_path / "program-ran"
    program = tmp_path / "fake-ssh-keygen"
    program.write_text(f"#!/bin/sh\ntouch {canary}\nexit 1\n")
    program.chmod(0o755)
    for name, value in (
        ("gpg.format", "ssh"),
        ("user.signingkey", str(key) + ".pub"),
        ("gpg.ssh.program", str(program)),  # the repository's choice: never run by ketch
        ("gpg.program", str(program)),
    ):
        subprocess.run([*GIT, "config", name, value], cwd=ws, check=True)
    receipt = tmp_path / "receipt.json"
    done = ketch("attest", "--key", "git", "--out", str(receipt), cwd=ws, env=env)
    assert done.returncode == 0, done.stderr
    assert not canary.exists()
    verified = ketch("verify", str(receipt), "--key", str(key) + ".pub", cwd=ws, env=env)
    assert verified.returncode == 0, verified.stdout
    # gpg.format openpgp: said plainly, nothing signed.
    subprocess.run([*GIT, "config", "gpg.format", "openpgp"], cwd=ws, check=True)
    refused = ketch("attest", "--key", "git", "--out", str(tmp_path / "x.json"), cwd=ws, env=env)
    assert refused.returncode == 1 and "gpg.format = openpgp" in refused.stderr
    assert "Traceback" not in refused.stderr and not (tmp_path / "x.json").exists()
