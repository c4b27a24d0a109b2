"""``ketch acp`` driven by the ACP SDK's own client, through a real process.

Each test spawns ``python -m ketch acp`` with ``acp.spawn_agent_process`` (as an
editor does), with the scripted model, and checks what reaches the client and what
happened on disk.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import HttpHeader, HttpMcpServer, ImageContentBlock, McpServerStdio

from ketch.testing.cli import run_cli
from tests.acp.acp_kit import AcpEnv, RecordingClient, agent_stderr, prompt, run_prompts, spawn

pytestmark = pytest.mark.timeout(120)

TEST_PLUGIN = "tests.acp.acp_test_plugin"
HEADER_SERVER = Path(__file__).with_name("header_mcp_server.py")
MCP_SERVER = str(Path(__file__).resolve().parents[1] / "mcp" / "mcp_test_server.py")


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 90))


def edit_script(old: str = "teh", new: str = "the") -> list[dict[str, Any]]:
    return [
        {
            "text": "Reading first.",
            "tool_calls": [{"name": "read_file", "input": {"path": "README.md"}}],
        },
        {
            "text": "Fixing it.",
            "tool_calls": [
                {
                    "name": "edit_file",
                    "input": {"path": "README.md", "old_string": old, "new_string": new},
                }
            ],
        },
        {"text": "Done."},
    ]


def dumped(update: Any) -> dict[str, Any]:
    return update.model_dump(by_alias=True, exclude_none=True)


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for m in request["messages"] for p in m["parts"] if p["type"] == "tool_result"]


def test_a_prompt_streams_its_chunks_and_ends_the_turn(acp_env: AcpEnv) -> None:
    acp_env.script(
        [
            {
                "text": "Hello there",
                "chunks": ["Hel", "lo ", "there"],
                "reasoning": "thinking it over",
            }
        ]
    )

    async def scenario() -> None:
        client = RecordingClient()
        async with spawn(acp_env, client) as (conn, _proc, init):
            caps = init.agent_capabilities
            assert init.protocol_version == 1
            assert caps.load_session is True and caps.prompt_capabilities.embedded_context is True
            assert caps.prompt_capabilities.image is True  # image blocks become image parts
            assert caps.prompt_capabilities.audio is False  # honest: no audio
            # The MCP plugin says it runs HTTP servers (mcp_transports; the SDK is installed).
            assert caps.mcp_capabilities.http is True and caps.mcp_capabilities.sse is False
            session = await conn.new_session(cwd=str(acp_env.workspace), mcp_servers=[])
            assert session.modes.current_mode_id == "build"
            assert {o.id: o.current_value for o in session.config_options} == {
                "mode": "build",
                "profile": "manual",
            }
            result = await conn.prompt(session_id=session.session_id, prompt=prompt("say hello"))
            assert result.stop_reason == "end_turn"
            chunks = [u.content.text for u in client.of("agent_message_chunk")]
            assert chunks == ["Hel", "lo ", "there"]
            assert "thinking it over" in "".join(
                u.content.text for u in client.of("agent_thought_chunk")
            )
            commands = client.of("available_commands_update")[0].available_commands
            assert "compact" in {c.name for c in commands}
            assert all(not c.name.startswith("/") for c in commands)
        (request,) = acp_env.requests()
        assert request["messages"][-1]["parts"][0]["text"] == "say hello"

    run(scenario())


def test_an_edit_asks_permission_with_its_diff_and_allow_once_applies_it(acp_env: AcpEnv) -> None:
    readme = acp_env.workspace / "README.md"
    readme.write_text("teh end\n", encoding="utf-8")
    acp_env.script(edit_script())
    client = RecordingClient(choose=lambda call, options: "allow_once")
    assert run_prompts(acp_env, client, "fix the typo") == ["end_turn"]
    (asked,) = client.permissions  # the read ran unasked; the edit asked
    tool_call, options = asked
    assert {o.kind for o in options} == {
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    }
    always = next(o for o in options if o.kind == "allow_always")
    assert "write(" in always.name and "workspace" in always.name  # ketch's scoped always, named
    # The editor saw the edit (a diff) before it was asked about it, and in the dialog.
    start = next(u for u in client.of("tool_call") if u.tool_call_id == tool_call.tool_call_id)
    assert start.kind == "edit" and start.locations[0].path == str(readme)
    diff = next(c for c in start.content if c.type == "diff")
    assert (diff.path, diff.old_text, diff.new_text) == (str(readme), "teh", "the")
    order = [item for _, item in client.timeline]
    assert order.index(start) < order.index(tool_call)
    assert any(c.type == "diff" for c in tool_call.content)
    done = [
        u
        for u in client.of("tool_call_update")
        if u.tool_call_id == tool_call.tool_call_id and u.status
    ]
    assert [u.status for u in done] == ["in_progress", "completed"]
    final = next(c for c in done[-1].content if c.type == "diff")
    assert (final.old_text, final.new_text) == ("teh end\n", "the end\n")
    assert readme.read_text(encoding="utf-8") == "the end\n"


def test_reject_once_leaves_the_file_unchanged_and_tells_the_model(acp_env: AcpEnv) -> None:
    readme = acp_env.workspace / "README.md"
    readme.write_text("teh end\n", encoding="utf-8")
    acp_env.script(edit_script())
    client = RecordingClient(choose=lambda call, options: "reject_once")
    assert run_prompts(acp_env, client, "fix the typo") == ["end_turn"]
    assert len(client.permissions) == 1
    assert len([u for u in client.of("tool_call_update") if u.status == "failed"]) == 1
    assert readme.read_text(encoding="utf-8") == "teh end\n"
    last = tool_results(acp_env.requests()[-1])[-1]
    assert last["ok"] is False and "declined" in last["output"]


def test_allow_always_is_the_policy_scope_saved_for_the_workspace(acp_env: AcpEnv) -> None:
    readme = acp_env.workspace / "README.md"
    readme.write_text("one\n", encoding="utf-8")
    acp_env.script([*edit_script("one", "two"), *edit_script("two", "three")])

    async def scenario() -> None:
        client = RecordingClient(choose=lambda call, options: "allow_always")
        async with spawn(acp_env, client) as (conn, _proc, _init):
            first = await conn.new_session(cwd=str(acp_env.workspace), mcp_servers=[])
            assert (
                await conn.prompt(session_id=first.session_id, prompt=prompt("one"))
            ).stop_reason == "end_turn"
            assert len(client.permissions) == 1
            # A new session in the same workspace: the saved scope allows the edit unasked.
            second = await conn.new_session(cwd=str(acp_env.workspace), mcp_servers=[])
            assert (
                await conn.prompt(session_id=second.session_id, prompt=prompt("two"))
            ).stop_reason == "end_turn"
            assert len(client.permissions) == 1
        assert readme.read_text(encoding="utf-8") == "three\n"

    run(scenario())


def test_reject_always_rejects_the_same_scope_unasked_for_the_session(acp_env: AcpEnv) -> None:
    readme = acp_env.workspace / "README.md"
    readme.write_text("one\n", encoding="utf-8")
    edit = {
        "name": "edit_file",
        "input": {"path": "README.md", "old_string": "one", "new_string": "two"},
    }
    acp_env.script(
        [
            {"tool_calls": [{"name": "read_file", "input": {"path": "README.md"}}]},
            {"tool_calls": [edit]},
            {"tool_calls": [edit]},
            {"text": "giving up"},
        ]
    )
    client = RecordingClient(choose=lambda call, options: "reject_always")
    assert run_prompts(acp_env, client, "edit") == ["end_turn"]
    assert len(client.permissions) == 1  # the second edit was rejected without asking
    assert readme.read_text(encoding="utf-8") == "one\n"
    assert "do not ask again" in tool_results(acp_env.requests()[-1])[-1]["output"]


def test_cancel_mid_stream_ends_the_prompt_cancelled(acp_env: AcpEnv) -> None:
    acp_env.script(
        [
            {"text": "working...", "tool_calls": [{"name": "list_dir", "input": {"path": "."}}]},
            {"delay": 60, "text": "never sent"},
        ]
    )

    async def scenario() -> None:
        client = RecordingClient()
        async with spawn(acp_env, client) as (conn, _proc, _init):
            session = await conn.new_session(cwd=str(acp_env.workspace), mcp_servers=[])
            running = asyncio.create_task(
                conn.prompt(session_id=session.session_id, prompt=prompt("go"))
            )
            await asyncio.wait_for(client.first_chunk.wait(), 30)
            while not any(u.status == "completed" for u in client.of("tool_call_update")):
                await asyncio.sleep(0.05)  # the model is now streaming its second answer
            await conn.cancel(session_id=session.session_id)
            result = await asyncio.wait_for(running, 10)
            assert result.stop_reason == "cancelled"
            assert "never sent" not in client.answer_text()
            # The session lives on: the next prompt is answered.
            again = await conn.prompt(session_id=session.session_id, prompt=prompt("still there?"))
            assert again.stop_reason == "end_turn"

    run(scenario())


def test_cancel_answers_a_pending_permission_request_as_cancelled(acp_env: AcpEnv) -> None:
    readme = acp_env.workspace / "README.md"
    readme.write_text("teh end\n", encoding="utf-8")
    acp_env.script(edit_script())

    async def scenario() -> None:
        client = RecordingClient()
        client.hold = asyncio.Event()  # the person never answers the dialog
        async with spawn(acp_env, client) as (conn, _proc, _init):
            session = await conn.new_session(cwd=str(acp_env.workspace), mcp_servers=[])
            running = asyncio.create_task(
                conn.prompt(session_id=session.session_id, prompt=prompt("fix"))
            )
            await asyncio.wait_for(client.permission_asked.wait(), 30)
            await conn.cancel(session_id=session.session_id)
            result = await asyncio.wait_for(running, 10)
            client.hold.set()  # the client now answers its dialog "cancelled", as it must
            assert result.stop_reason == "cancelled"
        assert readme.read_text(encoding="utf-8") == "teh end\n"

    run(scenario())


def test_load_restores_the_history_with_the_profile_reset(acp_env: AcpEnv) -> None:
    (acp_env.workspace / "notes.txt").write_text("hello\n", encoding="utf-8")
    acp_env.script(
        [
            {
                "text": "Let me look.",
                "tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}],
            },
            {"text": "It says hello."},
            {"text": "You asked about notes.txt."},
        ]
    )

    async def scenario() -> str:
        client = RecordingClient()
        async with spawn(acp_env, client) as (conn, _proc, _init):
            session = await conn.new_session(cwd=str(acp_env.workspace), mcp_servers=[])
            options = await conn.set_config_option(
                config_id="profile", session_id=session.session_id, value="full-access"
            )
            assert {o.id: o.current_value for o in options.config_options}[
                "profile"
            ] == "full-access"
            await conn.set_session_mode(session_id=session.session_id, mode_id="plan")
            assert client.of("current_mode_update")[-1].current_mode_id == "plan"
            assert (
                await conn.prompt(
                    session_id=session.session_id, prompt=prompt("what is in notes.txt?")
                )
            ).stop_reason == "end_turn"
            return session.session_id

    session_id = run(scenario())

    async def reload() -> None:
        client = RecordingClient()
        async with spawn(acp_env, client) as (conn, _proc, _init):
            loaded = await conn.load_session(
                cwd=str(acp_env.workspace), session_id=session_id, mcp_servers=[]
            )
            # Knowledge back (the mode), authority reset (the profile is manual again).
            assert {o.id: o.current_value for o in loaded.config_options} == {
                "mode": "plan",
                "profile": "manual",
            }
            assert loaded.modes.current_mode_id == "plan"
            users = [u.content.text for u in client.of("user_message_chunk")]
            assert users == ["what is in notes.txt?"]
            assert client.answer_text() == "Let me look.It says hello."
            (call,) = client.of("tool_call")
            assert (
                call.status == "completed"
                and call.kind == "read"
                and "hello" in call.content[0].content.text
            )
            result = await conn.prompt(session_id=session_id, prompt=prompt("and what did I ask?"))
            assert result.stop_reason == "end_turn"
        request = acp_env.requests()[-1]
        texts = [p.get("text", "") for m in request["messages"] for p in m["parts"]]
        assert (
            "what is in notes.txt?" in texts and "It says hello." in texts
        )  # the history went to the model

    run(reload())


def test_a_client_with_read_text_file_gives_the_model_its_buffer_not_the_disk(
    acp_env: AcpEnv,
) -> None:
    source = acp_env.workspace / "app.py"
    source.write_text("print('on disk')\n", encoding="utf-8")
    edit = {
        "name": "edit_file",
        "input": {"path": "app.py", "old_string": "unsaved buffer", "new_string": "edited"},
    }
    acp_env.script(
        [
            {"tool_calls": [edit]},
            {"tool_calls": [{"name": "read_file", "input": {"path": "app.py"}}]},
            {"tool_calls": [edit]},
            {"text": "done"},
        ]
    )
    client = RecordingClient(buffers={str(source): "print('unsaved buffer')\n"})
    assert run_prompts(acp_env, client, "edit it", read=True, write=True) == ["end_turn"]
    results = tool_results(acp_env.requests()[-1])
    # The read-coverage guard still applies to the editor's files: no edit before a read.
    assert results[0]["ok"] is False and "have not read it" in results[0]["output"]
    assert (
        results[1]["ok"] is True
        and "unsaved buffer" in results[1]["output"]
        and "on disk" not in results[1]["output"]
    )
    assert results[2]["ok"] is True
    assert str(source) in client.reads
    assert client.writes == [(str(source), "print('edited')\n")]  # the edit landed in the editor
    assert (
        source.read_text(encoding="utf-8") == "print('on disk')\n"
    )  # and not on disk behind its back


def test_without_fs_capabilities_ketch_uses_the_disk(acp_env: AcpEnv) -> None:
    source = acp_env.workspace / "app.py"
    source.write_text("print('on disk')\n", encoding="utf-8")
    acp_env.script(
        [{"tool_calls": [{"name": "read_file", "input": {"path": "app.py"}}]}, {"text": "ok"}]
    )
    client = RecordingClient(buffers={str(source): "print('unsaved')\n"})
    run_prompts(acp_env, client, "read it")
    assert client.reads == []
    assert "on disk" in tool_results(acp_env.requests()[-1])[0]["output"]


def test_embedded_resources_and_links_reach_the_model(acp_env: AcpEnv) -> None:
    from acp import embedded_text_resource, resource_block, resource_link_block, text_block

    acp_env.script([{"text": "seen"}])
    blocks = [
        text_block("explain this"),
        resource_block(
            embedded_text_resource(
                f"file://{acp_env.workspace}/main.py",
                "def selected(): ...",
                mime_type="text/x-python",
            )
        ),
        resource_link_block(
            "doc.pdf", f"file://{acp_env.workspace}/doc.pdf", mime_type="application/pdf"
        ),
    ]
    assert run_prompts(acp_env, RecordingClient(), blocks) == ["end_turn"]
    text = acp_env.requests()[-1]["messages"][-1]["parts"][0]["text"]
    assert text.startswith("explain this")
    assert f'<context ref="{acp_env.workspace}/main.py">\ndef selected(): ...\n</context>' in text
    assert f"[doc.pdf: {acp_env.workspace}/doc.pdf]" in text


def test_an_image_block_reaches_the_model_as_an_image(acp_env: AcpEnv) -> None:
    """initialize advertises images; an image block is an image part of the prompt (the
    model's request carries it, base64, with its media type)."""
    import base64
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (3, 2), (10, 200, 30)).save(buffer, format="PNG")
    data = base64.b64encode(buffer.getvalue()).decode()
    acp_env.script([{"text": "a green rectangle"}])

    async def scenario() -> None:
        client = RecordingClient()
        async with spawn(acp_env, client) as (conn, _proc, init):
            assert init.agent_capabilities.prompt_capabilities.image is True
            session = await conn.new_session(cwd=str(acp_env.workspace), mcp_servers=[])
            blocks = [
                *prompt("what is this?"),
                ImageContentBlock(type="image", mime_type="image/png", data=data),
            ]
            assert (
                await conn.prompt(session_id=session.session_id, prompt=blocks)
            ).stop_reason == "end_turn"

    asyncio.run(scenario())
    (request,) = acp_env.requests()
    parts = request["messages"][-1]["parts"]
    assert any(p["type"] == "text" and p["text"] == "what is this?" for p in parts)
    (image,) = [p for p in parts if p["type"] == "image"]
    assert (
        image["media_type"] == "image/png" and base64.b64decode(image["data"]) == buffer.getvalue()
    )


def test_errors_are_json_rpc_errors_with_ketchs_message(acp_env: AcpEnv) -> None:
    acp_env.script([{"text": "unused"}])

    async def scenario() -> None:
        client = RecordingClient()
        async with spawn(acp_env, client) as (conn, _proc, _init):
            with pytest.raises(RequestError) as unknown:
                await conn.prompt(session_id="ses_nope", prompt=prompt("hi"))
            assert unknown.value.code == -32002 and "ses_nope" in str(unknown.value)
            with pytest.raises(RequestError) as relative:
                await conn.new_session(cwd="relative/dir", mcp_servers=[])
            assert "absolute" in str(relative.value)
            session = await conn.new_session(cwd=str(acp_env.workspace), mcp_servers=[])
            with pytest.raises(RequestError) as image:
                await conn.prompt(
                    session_id=session.session_id,
                    prompt=[
                        ImageContentBlock(type="image", mime_type="image/tiff", data="iVBORw0KGgo=")
                    ],
                )
            assert image.value.code == -32602 and "image" in str(image.value)
            with pytest.raises(RequestError) as mode:
                await conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
            assert mode.value.code == -32602 and "build, plan" in str(mode.value)
            with pytest.raises(RequestError) as missing:
                await conn.load_session(
                    cwd=str(acp_env.workspace), session_id="ses_missing", mcp_servers=[]
                )
            assert missing.value.code == -32002 and "ses_missing" in str(missing.value)
            # An unsupported method is "method not found", never a silent success.
            with pytest.raises(RequestError) as auth:
                await conn.authenticate(method_id="x")
            assert auth.value.code == -32601
            # After all that the session still answers.
            assert (
                await conn.prompt(session_id=session.session_id, prompt=prompt("hi"))
            ).stop_reason == "end_turn"

    run(scenario())
    assert "Traceback" not in agent_stderr(acp_env)


def test_a_failed_turn_is_an_error_with_the_providers_message(acp_env: AcpEnv) -> None:
    acp_env.script(
        [{"error": {"kind": "auth", "message": "the key was rejected (401)", "retryable": False}}]
    )

    async def scenario() -> None:
        client = RecordingClient()
        async with spawn(acp_env, client) as (conn, _proc, _init):
            session = await conn.new_session(cwd=str(acp_env.workspace), mcp_servers=[])
            with pytest.raises(RequestError) as failed:
                await conn.prompt(session_id=session.session_id, prompt=prompt("hi"))
            assert failed.value.code == -32603 and "the key was rejected (401)" in str(failed.value)

    run(scenario())


def test_nothing_but_protocol_reaches_stdout(acp_env: AcpEnv) -> None:
    acp_env.script(
        [{"tool_calls": [{"name": "noisy", "input": {"text": "NOISE"}}]}, {"text": "quiet again"}]
    )
    client = RecordingClient()
    assert run_prompts(acp_env, client, "make noise", extra_load=TEST_PLUGIN) == ["end_turn"]
    assert client.answer_text() == "quiet again"
    log = agent_stderr(acp_env)
    for where in ("from print", "from fd 1", "from a child"):
        assert f"NOISE {where}" in log  # it went to stderr, the agent's log


def test_a_plan_tool_call_becomes_the_editors_plan(acp_env: AcpEnv) -> None:
    plan = {
        "plan": [
            {"step": "Find the bug", "status": "completed"},
            {"step": "Add a test", "status": "in_progress"},
        ]
    }
    acp_env.script([{"tool_calls": [{"name": "update_plan", "input": plan}]}, {"text": "on it"}])
    client = RecordingClient()
    run_prompts(acp_env, client, "plan it", extra_load=TEST_PLUGIN)
    (update,) = client.of("plan")
    assert [(e.content, e.status) for e in update.entries] == [
        ("Find the bug", "completed"),
        ("Add a test", "in_progress"),
    ]


def test_slash_commands_run_as_ketchs_commands(acp_env: AcpEnv) -> None:
    acp_env.script([{"text": "unused"}])
    client = RecordingClient()
    assert run_prompts(acp_env, client, "/mode plan") == ["end_turn"]
    assert client.of("current_mode_update")[-1].current_mode_id == "plan"
    assert acp_env.requests() == []  # the model was not asked


def test_a_markdown_command_sends_its_prompt_with_its_tools_narrowed(acp_env: AcpEnv) -> None:
    """A user's Markdown command in the editor: its expanded prompt is the turn, and its
    allowed-tools narrow what that turn offers (the same as in the shell)."""
    commands = acp_env.workspace / ".ketch" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text(
        "---\nallowed-tools: Read, Grep\n---\nReview $ARGUMENTS for bugs.\n"
    )
    acp_env.script([{"text": "looks fine"}])
    client = RecordingClient()
    assert run_prompts(acp_env, client, "/review src/") == ["end_turn"]
    (request,) = acp_env.requests()
    assert any("Review src/ for bugs." in json.dumps(m) for m in request["messages"])
    assert {t["name"] for t in request["tools"]} <= {"read_file", "grep"}
    assert "looks fine" in client.answer_text()


def _mcp_server(acp_env: AcpEnv) -> McpServerStdio:
    return McpServerStdio(
        name="tester",
        command=sys.executable,
        args=[MCP_SERVER, "--marker", str(acp_env.scratch / "mcp-started")],
        env=[{"name": "FROM_THE_EDITOR", "value": "1"}],
    )


def _trust_editor_servers(acp_env: AcpEnv, servers: list[Any]) -> None:
    """Pin the editor's servers for the workspace, as `ketch trust --yes` would."""
    from ketch_acp.booting import editor_items, mcp_settings
    from ketch_trust_kit import PinStore

    tables, _ = mcp_settings(servers)
    PinStore().pin(acp_env.workspace, editor_items(acp_env.workspace, tables).values())


def test_the_editors_mcp_servers_start_once_trusted(acp_env: AcpEnv) -> None:
    pytest.importorskip("mcp")
    _trust_editor_servers(acp_env, [_mcp_server(acp_env)])
    add = {"name": "mcp__tester__add", "input": {"a": 2, "b": 3}}
    acp_env.script(
        [
            {"tool_calls": [add]},
            {"tool_calls": [{"name": "mcp__tester__env_names", "input": {}}]},
            {"text": "done"},
        ]
    )
    client = RecordingClient(choose=lambda call, options: "allow_once")
    assert run_prompts(acp_env, client, "add", mcp_servers=[_mcp_server(acp_env)]) == ["end_turn"]
    requests = acp_env.requests()
    assert "mcp__tester__add" in {t["name"] for t in requests[0]["tools"]}
    outputs = [r["output"] for r in tool_results(requests[-1])]
    assert outputs[0] == "5" and "FROM_THE_EDITOR" in outputs[1].split("\n")


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_an_http_server_from_the_editor_gets_its_headers(acp_env: AcpEnv) -> None:
    pytest.importorskip("mcp")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = (acp_env.scratch / "http-server.log").open("w")
    server = subprocess.Popen(
        [sys.executable, str(HEADER_SERVER), str(port)], stdout=log, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 20
        while not _listening(port):
            assert server.poll() is None and time.monotonic() < deadline, (
                acp_env.scratch / "http-server.log"
            ).read_text()
            time.sleep(0.1)
        acp_env.script(
            [
                {"tool_calls": [{"name": "mcp__api__header", "input": {"name": "Authorization"}}]},
                {"text": "done"},
            ]
        )
        http = HttpMcpServer(
            type="http",
            name="api",
            url=f"http://127.0.0.1:{port}/mcp",
            headers=[HttpHeader(name="Authorization", value="Bearer editor-token")],
        )
        client = RecordingClient(choose=lambda call, options: "allow_once")
        _trust_editor_servers(acp_env, [http])
        assert run_prompts(acp_env, client, "who am I", mcp_servers=[http]) == ["end_turn"]
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()
    assert tool_results(acp_env.requests()[-1])[0]["output"] == "Bearer editor-token"


def test_the_editors_mcp_servers_do_not_start_until_trusted(acp_env: AcpEnv) -> None:
    pytest.importorskip("mcp")
    acp_env.script([{"text": "no tools"}])
    client = RecordingClient()
    run_prompts(acp_env, client, "hi", mcp_servers=[_mcp_server(acp_env)])
    assert not (acp_env.scratch / "mcp-started").exists()
    assert not any(t["name"].startswith("mcp__") for t in acp_env.requests()[0]["tools"])
    notes = "".join(u.content.text for u in client.of("agent_thought_chunk"))
    assert "tester" in notes and "not trusted" in notes and "ketch trust" in notes
    # `ketch trust` shows the server the editor passed (its command line, not its
    # environment's values), pins nothing without --yes, then trusts it with --yes.
    env = acp_env.agent_env()
    listed = run_cli(["trust"], cwd=acp_env.workspace, env=env)
    assert listed.returncode == 1, listed.stderr
    assert "MCP server tester (the editor (ACP))" in listed.stdout and MCP_SERVER in listed.stdout
    assert "FROM_THE_EDITOR=…" in listed.stdout
    assert run_cli(["trust", "--yes"], cwd=acp_env.workspace, env=env).returncode == 0
    acp_env.script([{"text": "now with tools"}])
    run_prompts(acp_env, RecordingClient(), "hi", mcp_servers=[_mcp_server(acp_env)])
    assert (acp_env.scratch / "mcp-started").exists()


def test_list_sessions_lists_this_workspaces_sessions(acp_env: AcpEnv) -> None:
    acp_env.script([{"text": "one"}])

    async def scenario() -> None:
        client = RecordingClient()
        async with spawn(acp_env, client) as (conn, _proc, _init):
            session = await conn.new_session(cwd=str(acp_env.workspace), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=prompt("remember me"))
            listed = await conn.list_sessions(cwd=str(acp_env.workspace))
            assert session.session_id in [s.session_id for s in listed.sessions]

    run(scenario())


def test_the_todo_list_becomes_the_editors_plan(acp_env: AcpEnv) -> None:
    # Issue 26: the task list the model keeps (the todo tool) is the editor's plan.
    todos = {
        "todos": [
            {"content": "Read the parser", "status": "completed"},
            {"content": "Fix the lexer", "status": "in_progress", "active_form": "Fixing it"},
            {"content": "Run the tests", "status": "pending"},
        ]
    }
    acp_env.script([{"tool_calls": [{"name": "todo", "input": todos}]}, {"text": "on it"}])
    client = RecordingClient()
    assert run_prompts(acp_env, client, "fix the lexer") == ["end_turn"]
    (update,) = client.of("plan")
    assert [(e.content, e.status) for e in update.entries] == [
        ("Read the parser", "completed"),
        ("Fix the lexer", "in_progress"),
        ("Run the tests", "pending"),
    ]
