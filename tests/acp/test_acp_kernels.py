"""``ketch acp`` serves each session with its own kernel, in one process: what one
session's person approves never shows in another's (issue 25 item 5; the in-process
kernels' test is tests/policy/test_two_kernels.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.acp.acp_kit import AcpEnv, RecordingClient, agent_stderr, prompt, spawn

ECHO = [
    {"tool_calls": [{"name": "shell", "input": {"command": "echo one"}}]},
    {"text": "first done"},
    {"tool_calls": [{"name": "shell", "input": {"command": "echo two"}}]},
    {"text": "second done"},
]


def test_an_always_allow_in_one_session_asks_again_in_another_workspace(acp_env: AcpEnv) -> None:
    other = acp_env.workspace.parent / "other-ws"
    other.mkdir()
    acp_env.script(ECHO)  # each session's model plays the whole script
    answers = iter(["allow_always", "allow_once", "allow_once"])
    client = RecordingClient(choose=lambda call, options: next(answers))

    async def scenario() -> None:
        async with spawn(acp_env, client) as (conn, _proc, _init):
            mine = await conn.new_session(cwd=str(acp_env.workspace), mcp_servers=[])
            theirs = await conn.new_session(cwd=str(other), mcp_servers=[])

            async def ask(session: Any, text: str) -> None:
                done = await conn.prompt(session_id=session.session_id, prompt=prompt(text))
                assert done.stop_reason == "end_turn"

            await ask(mine, "echo one")  # asked: "always allow" shell(echo:*) here
            assert len(client.permissions) == 1
            await ask(theirs, "echo one")  # another kernel: it asks
            assert len(client.permissions) == 2
            await ask(mine, "echo two")  # allowed by the approval, unasked
            assert len(client.permissions) == 2
            await ask(theirs, "echo two")  # still nothing approved there
            assert len(client.permissions) == 3

    asyncio.run(asyncio.wait_for(scenario(), 120))
    assert "Traceback" not in agent_stderr(acp_env)
    outputs = [
        p.get("output", "")
        for request in acp_env.requests()
        for m in request["messages"]
        for p in m["parts"]
        if p.get("type") == "tool_result"
    ]
    assert any(o.startswith("one") for o in outputs) and any(o.startswith("two") for o in outputs)
