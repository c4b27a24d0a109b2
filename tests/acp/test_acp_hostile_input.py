"""``ketch acp`` under what editors and networks really send: every line hostile.

Raw lines go to a real ``ketch acp`` process (no SDK client would send them); each is
answered per JSON-RPC 2.0 or ignored as the spec says, nothing reaches stderr as a
traceback, and the next valid line is answered as if nothing happened. Disconnects and
signals end the process with the documented status after a clean cancel, and leave
no process behind.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.acp.acp_kit import AcpEnv, RecordingClient, spawn
from tests.stdio_kit import StdioProcess, wait_gone, wait_started

pytestmark = pytest.mark.timeout(120)


def acp_process(env: AcpEnv, *options: str) -> StdioProcess:
    """``ketch OPTIONS acp`` (options before ``acp``: these tests are not about where
    options go)."""
    return StdioProcess(
        [sys.executable, "-m", "ketch", *options, "acp", "--provider", "scripted"],
        cwd=env.workspace,
        env=env.agent_env(),
        stderr_path=env.scratch / "agent-stderr.log",
    )


def initialize(request_id: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {"protocolVersion": 1},
    }


def answer_to(request_id: Any) -> Any:
    return lambda value: (
        isinstance(value, dict)
        and value.get("id") == request_id
        and ("result" in value or "error" in value)
    )


def code(value: Any) -> int:
    return int(value["error"]["code"])


HOSTILE: list[tuple[str, bytes, Any]] = [
    # (what, line, the answer: an error code (id null) or (code, id), "batch", None: none)
    ("an array", b"[]", -32600),
    ("a number", b"42", -32600),
    ("a string", b'"hi"', -32600),
    ("null", b"null", -32600),
    ("true", b"true", -32600),
    ("not JSON", b"garbage {", -32700),
    ("truncated", b'{"jsonrpc":"2.0","id":7,"method":"initi', -32700),
    ("binary", bytes(range(256)).replace(b"\n", b""), -32700),
    ("latin-1", b'{"jsonrpc":"2.0","id":1,"method":"\xe9"}', -32700),
    ("NaN", b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":NaN}}', -32700),
    ("deep arrays", b"[" * 100_000 + b"]" * 100_000, -32700),
    ("deep objects", b'{"a":' * 50_000 + b"1" + b"}" * 50_000, -32700),
    ("unbalanced deep", b"[" * 100_000, -32700),
    ("no jsonrpc", b'{"id":1,"method":"initialize","params":{"protocolVersion":1}}', (-32600, 1)),
    ("an object id", b'{"jsonrpc":"2.0","id":{"a":1},"method":"initialize"}', -32600),
    ("a float id", b'{"jsonrpc":"2.0","id":1.5,"method":"initialize"}', -32600),
    ("a numeric method", b'{"jsonrpc":"2.0","id":2,"method":5}', (-32600, 2)),
    (
        "string params",
        b'{"jsonrpc":"2.0","id":"s","method":"initialize","params":"x"}',
        (-32600, "s"),
    ),
    ("an empty object", b"{}", -32600),
    (
        "a batch",
        b'[1,{"jsonrpc":"2.0","id":4,"method":"initialize"},{"jsonrpc":"2.0","method":"n"}]',
        "batch",
    ),
    (
        "wrong params",
        b'{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":5}}',
        (-32602, 5),
    ),
    ("an unknown method", b'{"jsonrpc":"2.0","id":6,"method":"nope","params":{}}', (-32601, 6)),
    ("an unknown notification", b'{"jsonrpc":"2.0","method":"nope","params":[1]}', None),
    ("a cancel without params", b'{"jsonrpc":"2.0","method":"session/cancel"}', None),
    ("a stray response", b'{"jsonrpc":"2.0","id":999,"result":{}}', None),
    ("a malformed response", b'{"jsonrpc":"2.0","id":998,"error":"bad"}', None),
]


def test_every_hostile_line_is_answered_and_the_next_line_still_works(acp_env: AcpEnv) -> None:
    with acp_process(acp_env) as agent:
        for number, (what, line, expected) in enumerate(HOSTILE, start=100):
            agent.write(line + b"\n")
            agent.send(initialize(number))
            answer, before = agent.until(answer_to(number), timeout=30)
            assert answer["result"]["protocolVersion"] == 1, what
            if expected is None:
                assert before == [], (what, before)
            elif expected == "batch":
                # One array, one -32600 per request in it; the notification unanswered.
                assert len(before) == 1 and isinstance(before[0], list), (what, before)
                assert [(a["id"], code(a)) for a in before[0]] == [(None, -32600), (4, -32600)]
            else:
                want, request_id = expected if isinstance(expected, tuple) else (expected, None)
                assert len(before) == 1, (what, before)
                assert (code(before[0]), before[0]["id"]) == (want, request_id), (what, before)
                assert before[0]["error"]["message"], what
        agent.close_stdin()
        assert agent.wait(30) == 0
        log = agent.stderr()
    assert "Traceback" not in log, log[-3000:]


def test_an_over_long_line_is_dropped_unread_and_its_request_answered(acp_env: AcpEnv) -> None:
    from ketch_acp.transport import MAX_LINE

    head = b'{"jsonrpc":"2.0","id":77,"method":"initialize","params":{"protocolVersion":1,"x":"'
    with acp_process(acp_env) as agent:
        agent.write(head + b"a" * (MAX_LINE + 10) + b'"}}\n')
        agent.send(initialize(78))
        answer, before = agent.until(answer_to(78), timeout=60)
        assert answer["result"]["protocolVersion"] == 1
        assert [(b["id"], code(b)) for b in before] == [(77, -32600)]
        assert "allowed" in before[0]["error"]["message"]
        agent.close_stdin()
        assert agent.wait(30) == 0
    assert "Traceback" not in agent.stderr()


def _start_turn(acp_env: AcpEnv, agent: StdioProcess, marker: str) -> None:
    """A session whose turn is running ``sleep MARKER`` in the shell tool."""
    acp_env.script(
        [
            {"tool_calls": [{"name": "shell", "input": {"command": f"sleep {marker}"}}]},
            {"text": "done"},
        ]
    )
    agent.send(initialize(0))
    agent.until(answer_to(0))
    cwd = str(acp_env.workspace)
    agent.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/new",
            "params": {"cwd": cwd, "mcpServers": []},
        }
    )
    created, _ = agent.until(answer_to(1), timeout=60)
    session = created["result"]["sessionId"]
    agent.send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "sleep"}]},
        }
    )
    assert wait_started(marker), "the shell command never started"
    # (The shell tool registers the command's group right after starting it; a signal in
    # that instant is a race of the shell tool's own, not what these tests are about.)
    time.sleep(0.5)


def test_an_editor_that_disconnects_mid_turn_ends_the_session_and_ketch_exits(
    acp_env: AcpEnv,
) -> None:
    marker = "313.71"
    with acp_process(acp_env, "--profile", "full-access") as agent:
        _start_turn(acp_env, agent, marker)
        agent.close_stdin()
        # The prompt is answered "cancelled" (stdout is still open), and ketch exits 0.
        answer, _ = agent.until(answer_to(2), timeout=30)
        assert answer["result"]["stopReason"] == "cancelled"
        assert agent.wait(30) == 0
        assert wait_gone(marker) == [], "the turn's command outlived the session"
    assert "Traceback" not in agent.stderr()


def test_an_editor_that_vanishes_mid_turn_leaves_nothing_running(acp_env: AcpEnv) -> None:
    marker = "313.72"
    with acp_process(acp_env, "--profile", "full-access") as agent:
        _start_turn(acp_env, agent, marker)
        agent.stop_reading()  # the editor is gone: both pipes break
        agent.close_stdin()
        assert agent.wait(30) == 0
        assert wait_gone(marker) == []
    assert "Traceback" not in agent.stderr()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_cancels_the_turn_and_exits_128_plus_the_signal(
    acp_env: AcpEnv, signum: int
) -> None:
    marker = f"314.{signum}"
    with acp_process(acp_env, "--profile", "full-access") as agent:
        _start_turn(acp_env, agent, marker)
        agent.signal(signum)
        assert agent.wait(30) == 128 + signum
        assert wait_gone(marker) == []
    assert "Traceback" not in agent.stderr()


def test_session_options_work_after_acp(acp_env: AcpEnv) -> None:
    acp_env.script([{"text": "hi"}])

    async def scenario() -> Any:
        async with spawn(acp_env, RecordingClient(), "--profile", "assisted", "--mode", "plan") as (
            conn,
            _proc,
            _init,
        ):
            return await conn.new_session(cwd=str(acp_env.workspace), mcp_servers=[])

    session = asyncio.run(asyncio.wait_for(scenario(), 90))
    options = {o.id: o.current_value for o in session.config_options}
    assert options == {"mode": "plan", "profile": "assisted"}


def test_a_bad_option_after_acp_is_a_usage_error(acp_env: AcpEnv, tmp_path: Path) -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "ketch", "acp", "--profile", "yolo"],
        cwd=acp_env.workspace,
        env=acp_env.agent_env(),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "unknown --profile 'yolo'" in done.stderr and "Traceback" not in done.stderr
