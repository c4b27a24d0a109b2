"""Claude Code's official TypeScript Agent SDK (``@anthropic-ai/claude-agent-sdk``)
drives ketch unchanged (``pathToClaudeCodeExecutable`` is ``ketch-claude``), where node
and npm are available: installed once per test session into a temporary directory
(without its optional platform package, the bundled Claude Code binary, which the test
never runs). Skipped, with the reason, where node, npm or the registry is missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.headless.headless_kit import isolated_workspace
from tests.headless.sdk_kit import ketch_claude, sdk_env, write_config

TS_SDK = "@anthropic-ai/claude-agent-sdk@0.3.333"
DRIVER = Path(__file__).with_name("sdk_ts_driver.mjs")
pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


@pytest.fixture(scope="session")
def ts_sdk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed for the TypeScript Agent SDK (not installed here)")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0] or 0) < 18:
        pytest.skip(f"the TypeScript Agent SDK needs node 18 or newer (found {version})")
    prefix = tmp_path_factory.mktemp("ts-sdk")
    (prefix / "package.json").write_text('{"private": true, "type": "module"}', encoding="utf-8")
    install = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--omit=optional", TS_SDK],
        cwd=prefix,
        capture_output=True,
        text=True,
        timeout=240,
    )
    if install.returncode != 0:
        last = (install.stderr.strip().splitlines() or ["?"])[-1]
        pytest.skip(f"npm could not install {TS_SDK}: {last}")
    shutil.copy(DRIVER, prefix / DRIVER.name)
    return prefix


def drive(
    ts_sdk: Path, scenario: str, workspace: Path, scratch: Path, steps: list[dict[str, Any]]
) -> dict[str, Any]:
    env = {
        **os.environ,
        **sdk_env(scratch, steps),
        "KETCH_CLAUDE": ketch_claude(scratch),
        "KETCH_WS": str(workspace),
    }
    proc = subprocess.run(
        ["node", DRIVER.name, scenario],
        cwd=ts_sdk,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def place(tmp_path: Path) -> tuple[Path, Path]:
    workspace, scratch = isolated_workspace(tmp_path)
    write_config("")
    return workspace, scratch


def test_query_sees_init_tool_use_result_and_result(ts_sdk: Path, place: tuple[Path, Path]) -> None:
    workspace, scratch = place
    (workspace / "notes.md").write_text("the answer is 42\n", encoding="utf-8")
    steps = [
        {
            "text": "Reading it.",
            "tool_calls": [{"name": "read_file", "input": {"path": "notes.md"}, "id": "call_r1"}],
        },
        {"text": "It says 42."},
    ]
    seen = drive(ts_sdk, "query", workspace, scratch, steps)["seen"]
    assert (
        seen[0]["type"] == "system" and seen[0]["subtype"] == "init" and "Read" in seen[0]["tools"]
    )
    uses = [
        b for m in seen if m["type"] == "assistant" for b in m["blocks"] if b["type"] == "tool_use"
    ]
    assert [(u["id"], u["name"]) for u in uses] == [("call_r1", "Read")]
    results = [r for m in seen if m["type"] == "user" for r in m["results"]]
    assert results[0]["id"] == "call_r1" and "the answer is 42" in results[0]["content"]
    result = seen[-1]
    assert result["type"] == "result" and result["subtype"] == "success"
    assert result["result"] == "It says 42." and result["num_turns"] == 2


def test_can_use_tool_hooks_interrupt_and_permission_mode(
    ts_sdk: Path, place: tuple[Path, Path]
) -> None:
    workspace, scratch = place
    steps = [
        {
            "tool_calls": [
                {"name": "write_file", "input": {"path": "allowed.txt", "content": "yes"}},
                {"name": "write_file", "input": {"path": "denied.txt", "content": "no"}},
                {"name": "write_file", "input": {"path": "hooked.txt", "content": "no"}},
            ]
        },
        {"text": "Wrote what I was allowed to."},
        {"text": "thinking very slowly", "delay": 60},
        {"tool_calls": [{"name": "write_file", "input": {"path": "plan.md", "content": "v1"}}]},
        {"text": "written"},
    ]
    out = drive(ts_sdk, "control", workspace, scratch, steps)
    assert (workspace / "allowed.txt").read_text() == "yes"
    assert not (workspace / "denied.txt").exists()  # the program denied it: never ran
    assert not (workspace / "hooked.txt").exists()  # its hook denied it: never ran
    assert sorted(map(tuple, out["asked"])) == [("Write", "allowed.txt"), ("Write", "denied.txt")]
    assert sorted(h["path"] for h in out["hooked"]) == [
        "allowed.txt",
        "denied.txt",
        "hooked.txt",
        "plan.md",
    ]
    assert {h["tool_name"] for h in out["hooked"]} == {"Write"}
    assert sorted(d["tool_input"]["path"] for d in out["first"][-1]["denials"]) == [
        "denied.txt",
        "hooked.txt",
    ]
    assert out["second"][-1]["stop_reason"] == "cancelled" and out["elapsed"] < 20
    init = next(m for m in out["third"] if m["type"] == "system" and m["subtype"] == "init")
    assert init["permissionMode"] == "acceptEdits"
    assert (workspace / "plan.md").read_text() == "v1"  # acceptEdits: nobody asked
    assert len(out["asked"]) == 2 and out["third"][-1]["result"] == "written"


def test_an_in_process_mcp_server_and_deny_rules_sent_in_initialize(
    ts_sdk: Path, place: tuple[Path, Path]
) -> None:
    """With MCP servers the TypeScript SDK sends its options in ``initialize``
    (``--await-initialize``): its own server's tools are offered, and its
    ``disallowedTools`` deny (the shell command never runs)."""
    workspace, scratch = place
    steps = [
        {"tool_calls": [{"name": "mcp__calc__add", "input": {"a": 2, "b": 40}, "id": "call_add"}]},
        {"tool_calls": [{"name": "shell", "input": {"command": "touch canary.txt"}}]},
        {"text": "It is 42."},
    ]
    out = drive(ts_sdk, "mcp", workspace, scratch, steps)
    assert out["calls"] == [{"a": 2, "b": 40}]
    init = out["seen"][0]
    assert "mcp__calc__add" in init["tools"]
    results = [r for m in out["seen"] if m["type"] == "user" for r in m["results"]]
    assert "sum=42" in str(results[0]["content"])
    assert not (workspace / "canary.txt").exists()  # Bash was denied: it never ran
    assert results[1]["is_error"] is True
    assert out["seen"][-1]["result"] == "It is 42."
