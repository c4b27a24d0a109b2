"""What the receipt tests share: a git workspace, the real ``ketch`` as a subprocess with
the scripted model (on a terminal through pexpect when a person must approve), and
receipts read back without ketch's code."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.checkpoints.kit import ketch  # the real CLI as a subprocess

PLUGINS = [
    "guards",
    "headless",
    "fs",
    "shell",
    "sandbox",
    "policy",
    "store",
    "crypto",
    "checkpoints",
    "attest",
]
PROMPT_CANARY = "KETCHATTESTPROMPT7f3a"
CONTENT_CANARY = "KETCHATTESTCONTENT91c2"
GIT = ["git", "-c", "user.name=Tester", "-c", "user.email=tester@example.com"]

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
needs_ssh_keygen = pytest.mark.skipif(
    shutil.which("ssh-keygen") is None, reason="needs ssh-keygen (openssh-client)"
)


def make_workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "README.md").write_text("a project\n")
    (ws / "src" / "app.py").write_text("x = 1\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=ws, check=True)
    subprocess.run([*GIT, "commit", "-qm", "initial"], cwd=ws, check=True)
    return ws


def env_for(
    tmp_path: Path,
    script: list[dict[str, Any]] | None = None,
    *,
    base: dict[str, str] | None = None,
    **extra: str,
) -> dict[str, str]:
    """A ``ketch`` subprocess's environment over ``base`` (default: this process's)."""
    env = {
        **(os.environ if base is None else base),
        "PYTHON_KEYRING_BACKEND": "ketch.testing.keyring_backend.FileKeyring",
        "KETCH_TEST_KEYRING_FILE": str(tmp_path / "keyring.json"),
        "KETCH_LOAD": "scripted=ketch.testing.scripted_plugin",
        "KETCH_PLUGINS": ",".join([*PLUGINS, "scripted"]),
        "KETCH_SCRIPT": str(tmp_path / "script.json"),
        "KETCH_SCRIPT_LOG": str(tmp_path / "requests.jsonl"),
    }
    if script is not None:
        (tmp_path / "script.json").write_text(json.dumps(script), encoding="utf-8")
    env.update(extra)
    return env


def acceptance_script() -> list[dict[str, Any]]:
    """A proven read, an edit a person approves, a shell command a rule allows, and one
    a rule denies."""
    return [
        {"tool_calls": [{"name": "read_file", "input": {"path": "README.md"}}]},
        {"tool_calls": [{"name": "read_file", "input": {"path": "src/app.py"}}]},
        {
            "tool_calls": [
                {
                    "name": "edit_file",
                    "input": {
                        "path": "src/app.py",
                        "old_string": "x = 1",
                        "new_string": f"x = 2  # {CONTENT_CANARY}",
                    },
                }
            ]
        },
        {"tool_calls": [{"name": "shell", "input": {"command": "touch made.txt"}}]},
        {"tool_calls": [{"name": "shell", "input": {"command": "curl https://example.com/x"}}]},
        {"text": "done"},
    ]


RULES = ("--allow", "shell(touch:*)", "--deny", "shell(curl:*)")


def run_approving(ws: Path, env: dict[str, str], prompt: str, *more: str, answers: int = 1) -> str:
    """``ketch -p PROMPT`` on a terminal (manual profile): a person answers each question
    with "y". Returns what the terminal showed."""
    pexpect = pytest.importorskip("pexpect")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "ketch", "-p", prompt, "--provider", "scripted", *more],
        env=env,
        cwd=str(ws),
        encoding="utf-8",
        timeout=90,
        use_poll=True,  # fds past 1024 in a long test process
    )
    seen = ""
    for _ in range(answers):
        child.expect(r"allow\? \[y\]es")
        seen += (child.before or "") + (child.after or "")
        child.sendline("y")
    child.expect(pexpect.EOF)
    seen += child.before or ""
    child.close()
    assert child.exitstatus == 0, seen
    return seen


def envelope(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def statement(path: Path) -> dict[str, Any]:
    return json.loads(base64.b64decode(envelope(path)["payload"]))


def pae(env: dict[str, Any]) -> bytes:
    """DSSE's pre-authentication encoding, written out from the spec (not ketch's code)."""
    kind = env["payloadType"].encode()
    body = base64.b64decode(env["payload"])
    return (
        b"DSSEv1 "
        + str(len(kind)).encode()
        + b" "
        + kind
        + b" "
        + str(len(body)).encode()
        + b" "
        + body
    )


def calls_by_tool(stmt: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for call in stmt["predicate"]["calls"]:
        found.setdefault(call["tool"], []).append(call)
    return found


def session_id(ws: Path, env: dict[str, str]) -> str:
    listed = ketch("sessions", "list", "--json", cwd=ws, env=env)
    assert listed.returncode == 0, listed.stderr
    return str(json.loads(listed.stdout)[0]["id"])
