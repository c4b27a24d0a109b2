"""A policy that forbids unsandboxed calls fails the receipt of a session that had one --
whether the sandbox was off, or a call was approved to run outside it -- names that
call, and passes a session whose commands all ran inside the sandbox."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.attest.kit import env_for, ketch, make_workspace, needs_git, statement

pytestmark = [needs_git, pytest.mark.slow]

POLICY = "version = 1\nsandboxed = true\n"


def _bwrap_works() -> bool:
    if shutil.which("bwrap") is None:
        return False
    probe = subprocess.run(
        ["bwrap", "--ro-bind", "/", "/", "--unshare-all", "true"], capture_output=True
    )
    return probe.returncode == 0


def _session(
    tmp_path: Path, command: dict[str, object], *more: str, config: str = ""
) -> tuple[Path, dict[str, str], Path]:
    ws = make_workspace(tmp_path)
    env = env_for(tmp_path, [{"tool_calls": [{"name": "shell", "input": command}]}, {"text": "ok"}])
    if config:
        config_dir = Path(os.environ["KETCH_CONFIG_DIR"])
        config_dir.mkdir(parents=True, exist_ok=True)
        (config_dir / "config.toml").write_text(config)
    done = ketch("-p", "make a file", "--provider", "scripted", *more, cwd=ws, env=env)
    assert done.returncode == 0, done.stderr
    receipt = tmp_path / "receipt.json"
    made = ketch("attest", "--out", str(receipt), cwd=ws, env=env)
    assert made.returncode == 0, made.stderr
    (tmp_path / "policy.toml").write_text(POLICY)
    return ws, env, receipt


def test_a_session_with_the_sandbox_off_fails_a_sandboxed_policy(tmp_path: Path) -> None:
    ws, env, receipt = _session(
        tmp_path,
        {"command": "touch made.txt"},
        "--allow",
        "shell(touch:*)",
        config="[sandbox]\nenabled = false\n",
    )
    assert (ws / "made.txt").exists()  # it ran
    (call,) = statement(receipt)["predicate"]["calls"]
    assert call["sandboxed"] is False and call["sandbox"][0]["sandboxed"] is False
    done = ketch("verify", str(receipt), "--policy", str(tmp_path / "policy.toml"), cwd=ws, env=env)
    assert done.returncode == 1, done.stdout
    (failure,) = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    assert failure.startswith(
        f"FAILED: policy sandboxed: call {call['id']} (shell, turn 1) ran a program outside the sandbox"
    )
    assert "allowed by rule" in failure


def test_a_call_approved_to_leave_the_sandbox_fails_a_sandboxed_policy(tmp_path: Path) -> None:
    approve = tmp_path / "approve.sh"
    approve.write_text('#!/bin/sh\necho \'{"decision": "allow"}\'\n')
    approve.chmod(0o755)
    ws, env, receipt = _session(
        tmp_path,
        {"command": "touch outside.txt", "dangerously_disable_sandbox": True, "reason": "testing"},
        "--permission-prompt-command",
        str(approve),
    )
    assert (ws / "outside.txt").exists()
    (call,) = statement(receipt)["predicate"]["calls"]
    assert call["decidedBy"] == "prompt-command" and call["approved"] is True
    assert call["sandboxed"] is False and call["sandbox"] == []  # no sandbox wrapped it
    done = ketch("verify", str(receipt), "--policy", str(tmp_path / "policy.toml"), cwd=ws, env=env)
    assert done.returncode == 1
    assert "ran a program outside the sandbox, allowed by prompt-command" in done.stdout


@pytest.mark.skipif(not _bwrap_works(), reason="needs a working bubblewrap")
def test_a_session_whose_commands_all_ran_sandboxed_passes(tmp_path: Path) -> None:
    ws, env, receipt = _session(
        tmp_path, {"command": "touch made.txt"}, "--allow", "shell(touch:*)"
    )
    (call,) = statement(receipt)["predicate"]["calls"]
    assert call["sandboxed"] is True
    assert call["sandbox"][0]["network"] == "none" and call["sandbox"][0]["view"]["protected"] >= 1
    done = ketch("verify", str(receipt), "--policy", str(tmp_path / "policy.toml"), cwd=ws, env=env)
    assert done.returncode == 0, done.stdout
