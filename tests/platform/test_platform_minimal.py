"""The minimal build: the essential set (guards, provider_setup, plugin_list,
function_tools, workspace_settings, mode_options), one provider (openai), the file tools (fs) and the headless frontend, chosen with the allow-list
``KETCH_PLUGINS``. It works end to end against a real OpenAI-compatible server on
127.0.0.1: the model asks to read a file, the user approves on the terminal (there is no
policy plugin, so every call asks), the file tool runs, and the answer comes back.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pexpect
import pytest

from ketch.testing import isolated_env
from ketch.testing.cli import run_cli
from tests.platform.openai_stub import Answer, OpenAIStub

pytestmark = pytest.mark.minimal

BUILD = "openai,fs,headless"


def minimal_env(tmp_path: Path, stub: OpenAIStub) -> dict[str, str]:
    return {
        **isolated_env(tmp_path / "home"),
        "KETCH_PLUGINS": BUILD,
        "OPENAI_API_KEY": "sk-minimal-build-test",
        "OPENAI_BASE_URL": stub.base_url,
        "NO_COLOR": "1",
    }


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("the answer is 42\n")
    return ws


def test_only_the_chosen_plugins_load(tmp_path: Path) -> None:
    with OpenAIStub() as stub:
        result = run_cli(
            ["plugins", "--json"], cwd=workspace(tmp_path), env=minimal_env(tmp_path, stub)
        )
    assert result.returncode == 0, result.stderr
    status = {p["name"]: p["status"] for p in json.loads(result.stdout)}
    essential = {
        "guards",
        "provider_setup",
        "plugin_list",
        "function_tools",
        "workspace_settings",
        "mode_options",
    }
    assert {n for n, s in status.items() if s == "ok"} == {*essential, "openai", "fs", "headless"}
    assert all(
        s == "disabled"
        for n, s in status.items()
        if n not in (*essential, "openai", "fs", "headless")
    )


def test_a_turn_reads_a_file_after_approval_on_the_terminal(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    answers = [
        Answer(tool_calls=[("read_file", {"path": "notes.txt"})]),
        Answer(text="The notes say 42."),
    ]
    with OpenAIStub(*answers) as stub:
        env = {**os.environ, **minimal_env(tmp_path, stub)}
        child = pexpect.spawn(
            sys.executable,
            [
                "-m",
                "ketch",
                "-p",
                "what do the notes say?",
                "--provider",
                "openai",
                "--model",
                "stub-model",
            ],
            cwd=str(ws),
            env=env,
            encoding="utf-8",
            timeout=30,
            dimensions=(40, 200),
            use_poll=True,  # fds past 1024 in a long test process
        )
        try:
            child.expect(r"allow\? \[y\]es")
            child.sendline("y")
            child.expect("The notes say 42.")
            child.expect(pexpect.EOF)
        finally:
            child.close()
        assert child.exitstatus == 0, child.before
        # The second request carried the file's content back to the model as the tool result.
        tool_messages = [m for m in stub.requests[1]["messages"] if m.get("role") == "tool"]
        assert "the answer is 42" in tool_messages[0]["content"]
        offered = {t["function"]["name"] for t in stub.requests[0]["tools"]}
        assert {"read_file", "write_file", "edit_file"} <= offered
        assert not offered - {
            "read_file",
            "write_file",
            "edit_file",
            "list_dir",
            "glob",
        }  # nothing from other plugins
        assert stub.headers[0]["authorization"] == "Bearer sk-minimal-build-test"


def test_without_a_terminal_the_call_is_denied_and_the_turn_still_ends_cleanly(
    tmp_path: Path,
) -> None:
    ws = workspace(tmp_path)
    answers = [
        Answer(tool_calls=[("read_file", {"path": "notes.txt"})]),
        Answer(text="I could not read it."),
    ]
    with OpenAIStub(*answers) as stub:
        result = run_cli(
            [
                "-p",
                "what do the notes say?",
                "--provider",
                "openai",
                "--model",
                "stub-model",
                "--output-format",
                "stream-json",
            ],
            cwd=ws,
            env=minimal_env(tmp_path, stub),
        )
        assert result.returncode == 0, result.stderr
        [permission] = result.of_type("permission")
        assert permission["decision"] == "ask" and permission["approved"] is False
        [tool_result] = result.of_type("tool_result")
        assert not tool_result["ok"]
        assert result.of_type("turn_end")[0]["stop_reason"] == "end_turn"
        assert "the answer is 42" not in json.dumps(stub.requests)
        assert "sk-minimal-build-test" not in result.stdout + result.stderr
