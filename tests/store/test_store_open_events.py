"""Open events read back without the plugin that defined them (issue 25 item 2).

A session's journal holds an event a plugin registered (``ketch_register_events``): the
``todo`` plugin's ``todo`` event, written when the model keeps a task list. With that
plugin disabled, ``ketch sessions show`` (text and JSON), a resumed run
(``--continue``, ``--resume``, ``--output-format stream-json``) and ACP's
``session/load`` neither crash nor drop the rest of the session, and the event is kept:
read back as a plain event with every field, and still there, with the plugin's state,
once the plugin is back after the session was saved without it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.acp.acp_kit import AcpEnv, RecordingClient, agent_stderr, prompt, spawn

TODOS = [
    {"content": "write the tests", "status": "in_progress"},
    {"content": "ship", "status": "pending"},
]
SCRIPT = [
    {"tool_calls": [{"name": "todo", "input": {"todos": TODOS}}]},
    {"text": "planned"},
    {"text": "continued without the list"},
    {"text": "resumed by id"},
    {"text": "loaded in the editor"},
    {"text": "the list is back"},
]
WITHOUT = {"KETCH_DISABLE_PLUGINS": "todo"}


class Env:
    """One workspace, one encrypted store (a file keyring), the scripted model."""

    def __init__(self, tmp_path: Path) -> None:
        self.workspace = tmp_path / "ws"
        self.workspace.mkdir()
        self.scratch = tmp_path / "scratch"
        self.scratch.mkdir()
        self.base = {
            "PYTHON_KEYRING_BACKEND": "ketch.testing.keyring_backend.FileKeyring",
            "KETCH_TEST_KEYRING_FILE": str(tmp_path / "keyring.json"),
        }
        self.acp = AcpEnv(self.workspace.resolve(), self.scratch, dict(self.base))
        self.acp.script(SCRIPT)

    def ketch(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        environ = {**os.environ, **self.acp.agent_env(), **(env or {})}
        done = subprocess.run(
            [sys.executable, "-m", "ketch", *args],
            cwd=self.workspace,
            env=environ,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        return done

    def show(self, session_id: str, env: dict[str, str] | None = None) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(
            self.ketch("sessions", "show", session_id, "--json", env=env).stdout
        )
        return data


def stream(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def texts(request: dict[str, Any]) -> list[str]:
    return [p.get("text", "") for m in request["messages"] for p in m["parts"]]


def todo_entries(shown: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in shown["timeline"] if e["kind"] == "todo"]


def test_a_plugins_event_reads_back_without_the_plugin_and_is_kept(tmp_path: Path) -> None:
    env = Env(tmp_path)
    first = json.loads(
        env.ketch("-p", "plan it", "--provider", "scripted", "--output-format", "json").stdout
    )
    session_id = first["session_id"]
    assert first["result"] == "planned"
    [entry] = todo_entries(env.show(session_id))
    assert [t["content"] for t in entry["data"]["todos"]] == ["write the tests", "ship"]

    # Without the plugin: the session shows whole, the event as it was stored.
    shown = env.show(session_id, WITHOUT)
    assert todo_entries(shown) == [entry]
    assert len(shown["turns"]) == 1
    text = env.ketch("sessions", "show", session_id, env=WITHOUT).stdout
    assert "[user] plan it" in text and "[assistant] planned" in text

    # Resumed without it (the latest, then by id): the history goes to the model, the
    # new turn is saved, stream-json carries it.
    continued = env.ketch(
        "--continue", "-p", "go on", "--provider", "scripted", "--output-format", "stream-json",
        env=WITHOUT,
    )  # fmt: skip
    events = stream(continued)
    assert events[0]["type"] == "session" and events[0]["resumed"] is True
    assert events[0]["session_id"] == session_id
    assert events[-1]["type"] == "turn_end" and events[-1]["text"] == "continued without the list"
    request = env.acp.requests()[-1]
    assert {"plan it", "planned", "go on"} <= set(texts(request))
    by_id = env.ketch(
        "--resume", session_id, "-p", "once more", "--provider", "scripted",
        "--output-format", "json", env=WITHOUT,
    )  # fmt: skip
    assert json.loads(by_id.stdout)["result"] == "resumed by id"

    # ACP's session/load without it: the conversation is replayed, the session answers.
    async def load() -> None:
        client = RecordingClient()
        env.acp.env.update(WITHOUT)
        async with spawn(env.acp, client) as (conn, _proc, _init):
            await conn.load_session(
                cwd=str(env.acp.workspace), session_id=session_id, mcp_servers=[]
            )
            users = [u.content.text for u in client.of("user_message_chunk")]
            assert users == ["plan it", "go on", "once more"]
            assert "planned" in client.answer_text()
            assert not client.of("plan")  # nobody here knows the list
            result = await conn.prompt(session_id=session_id, prompt=prompt("in the editor"))
            assert result.stop_reason == "end_turn"
        for key in WITHOUT:
            env.acp.env.pop(key)

    asyncio.run(asyncio.wait_for(load(), 90))
    assert "Traceback" not in agent_stderr(env.acp)

    # The plugin back: its event is still in the journal, once, after three saves
    # without it, and its state came through them (the list is shown again on resume).
    shown = env.show(session_id)
    assert todo_entries(shown) == [entry]
    assert len(shown["turns"]) == 4, shown["turns"]  # plan it, go on, once more, in the editor
    back = stream(
        env.ketch(
            "--continue", "-p", "is the list back?", "--provider", "scripted",
            "--output-format", "stream-json",
        )
    )  # fmt: skip
    [shown_again] = [e for e in back if e["type"] == "todo"]
    assert [t["content"] for t in shown_again["todos"]] == ["write the tests", "ship"]
    assert back[-1]["text"] == "the list is back"
