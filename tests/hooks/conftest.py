"""The CLI runner the agent tests use (scripted model, bundled plugins, file keyring),
and Python hook scripts written the way people write Claude Code hooks."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agents.conftest import Cli


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def py_hook(cli: Cli, name: str, body: str) -> str:
    """A hook command running ``body`` (Python; ``data`` is the parsed stdin, and the
    stdin is kept in NAME.jsonl for the test to read)."""
    keep = cli.tmp / f"{name}.jsonl"
    script = cli.tmp / f"{name}.py"
    script.write_text(
        "import json, sys, time\n"
        "raw = sys.stdin.read()\n"
        f"open({str(keep)!r}, 'a').write(raw.strip() + '\\n')\n"
        "data = json.loads(raw)\n" + body + "\n"
    )
    return f"{sys.executable} {script}"


def answer(value: dict[str, Any]) -> str:
    return f"print(json.dumps({value!r}))"


def seen(cli: Cli, name: str) -> list[dict[str, Any]]:
    keep = cli.tmp / f"{name}.jsonl"
    return [json.loads(line) for line in keep.read_text().splitlines()] if keep.exists() else []


def hooks_config(*entries: tuple[str, str, str], extra: str = "") -> str:
    """``[[hooks.EVENT]]`` tables for (event, matcher, command)."""
    out = [extra] if extra else []
    for event, matcher, command in entries:
        out.append(
            f"[[hooks.{event}]]\nmatcher = {json.dumps(matcher)}\ncommand = {json.dumps(command)}\n"
        )
    return "\n".join(out)


def pre_deny(reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def pre_allow(
    reason: str = "the hook knows this is fine", updated: dict[str, Any] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "permissionDecisionReason": reason,
    }
    if updated is not None:
        out["updatedInput"] = updated
    return {"hookSpecificOutput": out}
