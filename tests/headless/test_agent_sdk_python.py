"""The official Python Agent SDK (``claude-agent-sdk``, pinned in the test extra) drives
ketch unchanged: ``cli_path`` is ``ketch-claude``, and everything else is the SDK's own
argv, messages and control protocol. Authority is checked by effect: a file the SDK
program denied, or a hard guard stopped, does not exist afterwards."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.headless.headless_kit import isolated_workspace
from tests.headless.sdk_kit import ketch_claude, requests, sdk_env, write_config

sdk = pytest.importorskip("claude_agent_sdk")
pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


@pytest.fixture
def place(tmp_path: Path) -> tuple[Path, Path]:
    workspace, scratch = isolated_workspace(tmp_path)
    write_config("")
    return workspace, scratch


def options(place: tuple[Path, Path], steps: list[dict[str, Any]], **extra: Any) -> Any:
    workspace, scratch = place
    return sdk.ClaudeAgentOptions(
        cli_path=ketch_claude(scratch),
        cwd=str(workspace),
        env=sdk_env(scratch, steps),
        **extra,
    )


def test_query_yields_init_assistant_tool_use_its_result_and_the_result(
    place: tuple[Path, Path],
) -> None:
    workspace, scratch = place
    (workspace / "notes.md").write_text("the answer is 42\n", encoding="utf-8")
    steps = [
        {
            "text": "Reading it.",
            "tool_calls": [
                {"name": "read_file", "input": {"path": "notes.md"}, "id": "call_read1"}
            ],
            "usage": {"input_tokens": 30, "output_tokens": 8},
        },
        {"text": "It says 42.", "usage": {"input_tokens": 60, "output_tokens": 4}},
    ]

    async def run() -> list[Any]:
        return [
            m async for m in sdk.query(prompt="What is in notes.md?", options=options(place, steps))
        ]

    messages = asyncio.run(run())
    init = messages[0]
    assert isinstance(init, sdk.SystemMessage) and init.subtype == "init"
    assert "Read" in init.data["tools"] and init.data["permissionMode"] == "default"
    assert init.data["session_id"].startswith("ses_") and init.data["model"]
    tool_uses = [
        block
        for m in messages
        if isinstance(m, sdk.AssistantMessage)
        for block in m.content
        if isinstance(block, sdk.ToolUseBlock)
    ]
    assert [(t.id, t.name, t.input["path"]) for t in tool_uses] == [
        ("call_read1", "Read", "notes.md")
    ]
    assert tool_uses[0].input["file_path"] == str(workspace / "notes.md")  # Claude Code's key
    results = [
        block
        for m in messages
        if isinstance(m, sdk.UserMessage) and isinstance(m.content, list)
        for block in m.content
        if isinstance(block, sdk.ToolResultBlock)
    ]
    assert len(results) == 1 and results[0].tool_use_id == "call_read1"
    assert "the answer is 42" in str(results[0].content) and not results[0].is_error
    texts = [
        b.text
        for m in messages
        if isinstance(m, sdk.AssistantMessage)
        for b in m.content
        if isinstance(b, sdk.TextBlock)
    ]
    assert texts == ["Reading it.", "It says 42."]
    result = messages[-1]
    assert isinstance(result, sdk.ResultMessage)
    assert result.subtype == "success" and not result.is_error and result.result == "It says 42."
    assert result.num_turns == 2 and result.session_id == init.data["session_id"]
    assert result.usage["input_tokens"] == 90 and result.usage["output_tokens"] == 12
    assert result.total_cost_usd is None  # the scripted model has no price: never made up
    assert isinstance(result.duration_ms, int) and isinstance(result.duration_api_ms, int)
    # The SDK's system prompt default (--system-prompt "") adds nothing; the prompt arrived.
    assert "What is in notes.md?" in str(requests(scratch)[0]["messages"])


def test_reasoning_arrives_as_a_thinking_block(place: tuple[Path, Path]) -> None:
    steps = [{"reasoning": "The user greets me.", "text": "Hello!"}]

    async def run() -> list[Any]:
        return [m async for m in sdk.query(prompt="hi", options=options(place, steps))]

    messages = asyncio.run(run())
    blocks = [b for m in messages if isinstance(m, sdk.AssistantMessage) for b in m.content]
    assert [type(b).__name__ for b in blocks] == ["ThinkingBlock", "TextBlock"]
    assert blocks[0].thinking == "The user greets me." and blocks[1].text == "Hello!"


def test_partial_messages_stream_the_answer_as_anthropic_events(place: tuple[Path, Path]) -> None:
    steps = [{"text": "Hello there, friend.", "chunks": ["Hello ", "there, ", "friend."]}]

    async def run() -> list[Any]:
        opts = options(place, steps, include_partial_messages=True)
        return [m async for m in sdk.query(prompt="hi", options=opts)]

    messages = asyncio.run(run())
    events = [m.event for m in messages if isinstance(m, sdk.StreamEvent)]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert "content_block_start" in kinds and "message_delta" in kinds
    streamed = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert streamed == "Hello there, friend."
    assert isinstance(messages[-1], sdk.ResultMessage) and messages[-1].result == streamed


def test_client_can_use_tool_allows_one_denies_another_and_a_hook_denies_a_third(
    place: tuple[Path, Path],
) -> None:
    workspace, scratch = place
    asked: list[tuple[str, str]] = []
    hooked: list[dict[str, Any]] = []

    async def can_use_tool(name: str, data: dict[str, Any], context: Any) -> Any:
        asked.append((name, data.get("path", "")))
        if data.get("path") == "allowed.txt":
            return sdk.PermissionResultAllow()
        return sdk.PermissionResultDeny(message="not that one")

    async def pre_tool_use(data: dict[str, Any], tool_use_id: str | None, context: Any) -> Any:
        hooked.append(data)
        if "hooked" in str(data["tool_input"].get("path", "")):
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "the hook says no",
                }
            }
        return {}

    steps = [
        {
            "tool_calls": [
                {"name": "write_file", "input": {"path": "allowed.txt", "content": "yes"}},
                {"name": "write_file", "input": {"path": "denied.txt", "content": "no"}},
                {"name": "write_file", "input": {"path": "hooked.txt", "content": "no"}},
            ]
        },
        {"text": "Wrote what I was allowed to."},
    ]
    opts = options(
        place,
        steps,
        can_use_tool=can_use_tool,
        hooks={"PreToolUse": [sdk.HookMatcher(matcher="Write", hooks=[pre_tool_use])]},
    )

    async def run() -> list[Any]:
        async with sdk.ClaudeSDKClient(options=opts) as client:
            await client.query("write three files")
            return [m async for m in client.receive_response()]

    messages = asyncio.run(run())
    assert (workspace / "allowed.txt").read_text() == "yes"
    assert not (workspace / "denied.txt").exists()  # denied by can_use_tool: never ran
    assert not (workspace / "hooked.txt").exists()  # denied by the hook: never ran
    assert sorted(asked) == [
        ("Write", "allowed.txt"),
        ("Write", "denied.txt"),
    ]  # not the hooked one
    assert sorted(h["tool_input"]["path"] for h in hooked) == [
        "allowed.txt",
        "denied.txt",
        "hooked.txt",
    ]
    assert all(h["tool_name"] == "Write" and h["hook_event_name"] == "PreToolUse" for h in hooked)
    result = messages[-1]
    assert isinstance(result, sdk.ResultMessage) and result.subtype == "success"
    denied = sorted(d["tool_input"]["path"] for d in result.permission_denials)
    assert denied == ["denied.txt", "hooked.txt"]
    feedback = str(requests(scratch)[1]["messages"][-1])
    assert "not that one" in feedback and "the hook says no" in feedback
    # Provenance names who answered: the SDK program's callback, and the hook.
    receipt, key = scratch / "receipt.json", scratch / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    made = subprocess.run(
        [sys.executable, "-m", "ketch", "attest", "--include-prompts", "--key", f"ssh:{key}"]
        + ["--out", str(receipt)],
        cwd=workspace,
        env={**os.environ, **sdk_env(scratch, [])},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    payload = json.loads(base64.b64decode(json.loads(receipt.read_text())["payload"]))
    by_path = {c["proposed"]["input"]["path"]: c for c in payload["predicate"]["calls"]}
    assert by_path["allowed.txt"]["decidedBy"] == "sdk" and by_path["allowed.txt"]["approved"]
    assert by_path["denied.txt"]["decidedBy"] == "sdk" and not by_path["denied.txt"]["approved"]
    assert by_path["hooked.txt"]["decidedBy"] == "hook"


def test_a_program_cannot_approve_a_hard_guard_even_in_bypass_mode(
    place: tuple[Path, Path], tmp_path: Path
) -> None:
    """bypassPermissions is full-access: the hard guards still ask, and a can_use_tool
    "allow" does not answer for the person. The file outside the workspace stays unwritten."""
    workspace, _ = place
    outside = tmp_path / "outside.txt"
    asked: list[str] = []

    async def allow_everything(name: str, data: dict[str, Any], context: Any) -> Any:
        asked.append(name)
        return sdk.PermissionResultAllow()

    steps = [
        {
            "tool_calls": [
                {"name": "write_file", "input": {"path": str(outside), "content": "escaped"}},
                {"name": "write_file", "input": {"path": "inside.txt", "content": "fine"}},
            ]
        },
        {"text": "done"},
    ]
    opts = options(place, steps, can_use_tool=allow_everything, permission_mode="bypassPermissions")

    async def run() -> list[Any]:
        async with sdk.ClaudeSDKClient(options=opts) as client:
            await client.query("write both")
            return [m async for m in client.receive_response()]

    messages = asyncio.run(run())
    assert not outside.exists()
    assert (workspace / "inside.txt").read_text() == "fine"  # full-access: no question asked
    assert asked == []  # the program was never asked: the guard's ask is the person's
    assert messages[0].data["permissionMode"] == "bypassPermissions"
    assert [d["tool_input"]["path"] for d in messages[-1].permission_denials] == [str(outside)]


def test_interrupt_mid_turn_and_permission_mode_change(place: tuple[Path, Path]) -> None:
    workspace, _ = place
    asked: list[str] = []

    async def can_use_tool(name: str, data: dict[str, Any], context: Any) -> Any:
        asked.append(str(data.get("path")))
        return sdk.PermissionResultDeny(message="ask me later")

    steps = [
        {"text": "thinking very slowly", "delay": 60},
        {"tool_calls": [{"name": "write_file", "input": {"path": "plan.md", "content": "v1"}}]},
        {"text": "written"},
    ]
    opts = options(place, steps, can_use_tool=can_use_tool)

    async def run() -> tuple[list[Any], list[Any], float]:
        async with sdk.ClaudeSDKClient(options=opts) as client:
            await client.query("slow question")
            await asyncio.sleep(1.0)  # the model is mid-answer
            started = asyncio.get_running_loop().time()
            await client.interrupt()
            first = [m async for m in client.receive_response()]
            elapsed = asyncio.get_running_loop().time() - started
            await client.set_permission_mode("acceptEdits")
            await client.query("write the plan")
            second = [m async for m in client.receive_response()]
            return first, second, elapsed

    first, second, elapsed = asyncio.run(run())
    assert elapsed < 20  # not the 60 s the model would have taken
    assert isinstance(first[-1], sdk.ResultMessage) and first[-1].stop_reason == "cancelled"
    init = next(m for m in second if isinstance(m, sdk.SystemMessage) and m.subtype == "init")
    assert init.data["permissionMode"] == "acceptEdits"
    assert (workspace / "plan.md").read_text() == "v1"  # acceptEdits: no question for an edit
    assert asked == []
    assert second[-1].result == "written"


def test_an_in_process_sdk_mcp_server_and_set_model(place: tuple[Path, Path]) -> None:
    """``create_sdk_mcp_server``: ketch is its MCP client over ``mcp_message``; the tool
    runs in the program, and the policy voted on it (allowed by ``allowed_tools``)."""
    _, scratch = place
    calls: list[dict[str, Any]] = []

    @sdk.tool("add", "Add two numbers", {"a": int, "b": int})
    async def add(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"content": [{"type": "text", "text": f"sum={args['a'] + args['b']}"}]}

    server = sdk.create_sdk_mcp_server(name="calc", version="1.0.0", tools=[add])
    steps = [
        {"tool_calls": [{"name": "mcp__calc__add", "input": {"a": 2, "b": 40}, "id": "call_add"}]},
        {"text": "It is 42."},
        {"text": "second model speaking"},
    ]
    opts = options(place, steps, mcp_servers={"calc": server}, allowed_tools=["mcp__calc__add"])

    async def run() -> tuple[list[Any], list[Any]]:
        async with sdk.ClaudeSDKClient(options=opts) as client:
            await client.query("add 2 and 40")
            first = [m async for m in client.receive_response()]
            await client.set_model("another-model")
            await client.query("who are you?")
            second = [m async for m in client.receive_response()]
            return first, second

    first, second = asyncio.run(run())
    assert calls == [{"a": 2, "b": 40}]  # the program's own tool ran, once
    init = first[0]
    assert "mcp__calc__add" in init.data["tools"]
    results = [
        b
        for m in first
        if isinstance(m, sdk.UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, sdk.ToolResultBlock)
    ]
    assert results and "sum=42" in str(results[0].content)
    assert first[-1].result == "It is 42."
    assert [r["model"] for r in requests(scratch)][-1] == "another-model"
    assert second[-1].result == "second model speaking"


def test_can_use_tool_cannot_swap_the_input_it_approves(place: tuple[Path, Path]) -> None:
    workspace, _ = place

    async def swap(name: str, data: dict[str, Any], context: Any) -> Any:
        return sdk.PermissionResultAllow(updated_input={**data, "path": "swapped.txt"})

    steps = [
        {"tool_calls": [{"name": "write_file", "input": {"path": "asked.txt", "content": "x"}}]},
        {"text": "ok"},
    ]

    async def run() -> list[Any]:
        async with sdk.ClaudeSDKClient(options=options(place, steps, can_use_tool=swap)) as client:
            await client.query("write it")
            return [m async for m in client.receive_response()]

    messages = asyncio.run(run())
    assert not (workspace / "asked.txt").exists() and not (workspace / "swapped.txt").exists()
    assert [d["tool_input"]["path"] for d in messages[-1].permission_denials] == ["asked.txt"]
