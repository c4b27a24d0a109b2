"""Commit trailers: ``--trailer`` prints ``Ketch-Receipt: sha256:<the receipt file's
SHA-256>`` for ``git commit --trailer``; ``--amend`` adds it to the last commit only when
that commit holds exactly the session's changes, without running any hook, signing
program or editor the repository configures; ``ketch verify`` then names the trailer."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from tests.attest.kit import GIT, env_for, ketch, make_workspace, needs_git

pytestmark = [needs_git, pytest.mark.slow]

HOOKS = (
    "pre-commit",
    "commit-msg",
    "post-commit",
    "post-rewrite",
    "reference-transaction",
    "pre-auto-gc",
)


def _git(ws: Path, *args: str) -> str:
    return subprocess.run(
        [*GIT, *args], cwd=ws, check=True, capture_output=True, text=True
    ).stdout.strip()


def _hostile(ws: Path, canary: Path) -> None:
    """Hooks in both places git looks, a signing program, and commit signing on."""
    program = ws.parent / "program"
    program.write_text(f'#!/bin/sh\necho "$0 $*" >> {canary}\nexit 0\n')
    program.chmod(0o755)
    elsewhere = ws.parent / "hooks"
    elsewhere.mkdir()
    for directory in (ws / ".git" / "hooks", elsewhere):
        for hook in HOOKS:
            (directory / hook).write_text(f"#!/bin/sh\necho {hook} >> {canary}\n")
            (directory / hook).chmod(0o755)
    for name, value in (
        ("core.hooksPath", str(elsewhere)),
        ("commit.gpgSign", "true"),
        ("gpg.program", str(program)),
        ("gpg.ssh.program", str(program)),
        ("core.fsmonitor", str(program)),
        ("trailer.ketch-receipt.command", str(program)),
    ):
        _git(ws, "config", name, value)


def _session(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    ws = make_workspace(tmp_path)
    script = [
        {
            "tool_calls": [
                {"name": "write_file", "input": {"path": "src/new.py", "content": "y = 3\n"}}
            ]
        },
        {"text": "ok"},
    ]
    env = env_for(tmp_path, script)
    done = ketch("-p", "write", "--provider", "scripted", "--profile", "assisted", cwd=ws, env=env)
    assert done.returncode == 0, done.stderr
    return ws, env


def test_amend_adds_the_trailer_and_runs_nothing_the_repository_configures(tmp_path: Path) -> None:
    ws, env = _session(tmp_path)
    _git(ws, "add", "-A")
    subprocess.run(
        [
            *GIT,
            "-c",
            "commit.gpgSign=false",
            "-c",
            "core.hooksPath=/dev/null",
            "commit",
            "-qm",
            "agent change\n\nbody",
        ],
        cwd=ws,
        check=True,
    )
    canary = tmp_path / "ran"
    _hostile(ws, canary)
    before = {
        "tree": _git(ws, "rev-parse", "HEAD^{tree}"),
        "parent": _git(ws, "rev-parse", "HEAD^"),
    }
    receipt = tmp_path / "receipt.json"
    done = ketch("attest", "--out", str(receipt), "--trailer", "--amend", cwd=ws, env=env)
    assert done.returncode == 0, done.stderr
    digest = hashlib.sha256(receipt.read_bytes()).hexdigest()
    assert done.stdout.strip() == f"Ketch-Receipt: sha256:{digest}"
    message = _git(ws, "log", "-1", "--format=%B")
    assert message.splitlines() == [
        "agent change",
        "",
        "body",
        "",
        f"Ketch-Receipt: sha256:{digest}",
    ]
    assert _git(ws, "rev-parse", "HEAD^{tree}") == before["tree"]
    assert _git(ws, "rev-parse", "HEAD^") == before["parent"]
    assert not canary.exists(), canary.read_text()
    assert (
        _git(
            ws,
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
            "fsck",
            "--no-progress",
        )
        == ""
    )
    verified = ketch("verify", str(receipt), cwd=ws, env=env)
    assert verified.returncode == 0, verified.stdout
    assert f"ok: git: HEAD carries this receipt's trailer (sha256:{digest})" in verified.stdout
    assert not canary.exists()


def test_trailer_alone_prints_it_and_amend_refuses_a_commit_without_the_changes(
    tmp_path: Path,
) -> None:
    ws, env = _session(tmp_path)
    head = _git(ws, "rev-parse", "HEAD")
    receipt = tmp_path / "receipt.json"
    printed = ketch("attest", "--out", str(receipt), "--trailer", cwd=ws, env=env)
    assert printed.returncode == 0, printed.stderr
    assert (
        printed.stdout.strip()
        == f"Ketch-Receipt: sha256:{hashlib.sha256(receipt.read_bytes()).hexdigest()}"
    )
    other = tmp_path / "other.json"
    refused = ketch("attest", "--out", str(other), "--trailer", "--amend", cwd=ws, env=env)
    assert refused.returncode == 1
    assert "the last commit does not hold the session's changes" in refused.stderr
    assert _git(ws, "rev-parse", "HEAD") == head and other.exists()  # written, HEAD left alone
    # Committing exactly those changes with git's own --trailer: the receipt then names HEAD's tree.
    _git(ws, "add", "-A")
    trailer = printed.stdout.strip()
    subprocess.run(
        [
            *GIT,
            "-c",
            "core.hooksPath=/dev/null",
            "commit",
            "-qm",
            "agent change",
            "--trailer",
            trailer,
        ],
        cwd=ws,
        check=True,
    )
    verified = ketch("verify", str(receipt), cwd=ws, env=env)
    assert verified.returncode == 0, verified.stdout
    assert (
        "is the receipt's" in verified.stdout
        and "carries this receipt's trailer" in verified.stdout
    )
