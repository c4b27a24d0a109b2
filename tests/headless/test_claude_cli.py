"""``claude -p`` scripts on ketch: the json object and the Claude Code stream-json one
flag (or the ``ketch-claude`` command) away, read by the real ``jq``; the options
``claude -p`` takes, each doing what it says or saying it does nothing here."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.headless.headless_kit import Headless
from tests.headless.sdk_kit import ketch_claude

pytestmark = pytest.mark.timeout(120)
KETCH = f"{shlex.quote(sys.executable)} -m ketch --provider scripted"


def pipe(headless: Headless, command: str) -> subprocess.CompletedProcess[str]:
    """A shell pipeline, as a script would run it."""
    return subprocess.run(
        ["/bin/sh", "-c", command],
        cwd=headless.workspace,
        env=headless.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def jq(headless: Headless, producer: str, program: str, stdout: str = "") -> str:
    """``producer | jq -r PROGRAM`` with the real jq; without jq, the same object read
    with Python's json (``program`` must then be ``.result``)."""
    if shutil.which("jq"):
        done = pipe(headless, f"{producer} | jq -r {shlex.quote(program)}")
        assert done.returncode == 0, done.stderr
        return done.stdout
    done = pipe(headless, producer)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return "".join(f"{x['result']}\n" for x in lines if x.get("type") == "result")


def test_json_output_piped_to_jq_result_prints_the_answer(headless: Headless) -> None:
    headless.script([{"text": "The answer is 42."}])
    out = jq(headless, f"{KETCH} -p 'what is it?' --output-format json", ".result")
    assert out == "The answer is 42.\n"


def test_claude_stream_json_is_one_flag_away_and_jq_selects_the_result(headless: Headless) -> None:
    headless.script(
        [
            {"text": "Found it.", "tool_calls": [{"name": "list_dir", "input": {"path": "."}}]},
            {"text": "All done."},
        ]
    )
    command = f"{KETCH} -p go --output-format stream-json --verbose --stream-schema claude"
    out = jq(headless, command, 'select(.type=="result").result')
    assert out == "All done.\n"
    headless.script(
        [
            {"text": "Found it.", "tool_calls": [{"name": "list_dir", "input": {"path": "."}}]},
            {"text": "All done."},
        ]
    )
    lines = [json.loads(x) for x in pipe(headless, command).stdout.splitlines()]
    assert [x["type"] for x in lines if x["type"] != "system" or x["subtype"] == "init"] == [
        "system",
        "assistant",
        "assistant",
        "user",
        "assistant",
        "result",
    ]


def test_the_ketch_claude_command_speaks_claude_code_by_default(headless: Headless) -> None:
    headless.script([{"text": "hello"}])
    command = f"{shlex.quote(ketch_claude(headless.scratch))} --provider scripted -p hi --output-format stream-json --verbose"
    out = jq(headless, command, 'select(.type=="result") | .subtype + " " + .result')
    assert out == "success hello\n"


def test_ketch_own_stream_stays_the_default(headless: Headless) -> None:
    headless.script([{"text": "hello"}])
    proc = headless.run("-p", "hi", "--output-format", "stream-json")
    kinds = [json.loads(x)["type"] for x in proc.stdout.splitlines()]
    assert "turn_end" in kinds and "result" not in kinds and "assistant" not in kinds


def test_a_namespaced_command_runs_in_a_headless_turn(headless: Headless) -> None:
    folder = headless.workspace / ".claude" / "commands" / "git"
    folder.mkdir(parents=True)
    (folder / "commit.md").write_text(
        "---\nargument-hint: [message]\ndescription: Commit: with a message\n---\nCreate a commit with message: $ARGUMENTS\n",
        encoding="utf-8",
    )
    headless.script([{"text": "committed"}])
    proc = headless.run("-p", "/git:commit fix the typo", "--output-format", "json")
    assert proc.returncode == 0, proc.stderr
    sent = json.dumps(headless.requests()[0]["messages"])
    assert "Create a commit with message: fix the typo" in sent and "/git:commit" not in sent


def test_options_the_sdk_passes_that_do_nothing_here_are_said_not_refused(
    headless: Headless,
) -> None:
    headless.script([{"text": "ok"}])
    proc = headless.run(
        "-p",
        "hi",
        "--output-format",
        "stream-json",
        "--verbose",
        "--stream-schema",
        "claude",
        "--fallback-model",
        "other",
        "--effort",
        "high",
        "--setting-sources=user,project",
        "--fork-session",
        "--max-thinking-tokens",
        "1000",
    )
    assert proc.returncode == 0, proc.stderr
    notices = [json.loads(x)["message"] for x in proc.stdout.splitlines() if '"notice"' in x]
    for flag in (
        "--fallback-model",
        "--effort",
        "--setting-sources",
        "--fork-session",
        "--max-thinking-tokens",
    ):
        assert any(n.startswith(f"{flag} has no effect in ketch") for n in notices), (flag, notices)


def test_a_permission_prompt_tool_other_than_stdio_is_a_usage_error(headless: Headless) -> None:
    proc = headless.run("-p", "hi", "--permission-prompt-tool", "mcp__perm__ask")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "--permission-prompt-command" in proc.stderr


def test_tools_system_prompt_and_max_turns(headless: Headless) -> None:
    headless.script(
        [{"tool_calls": [{"name": "list_dir", "input": {"path": "."}}]}, {"text": "never"}]
    )
    proc = headless.run(
        "-p",
        "hi",
        "--output-format",
        "json",
        "--tools",
        "Read,Glob,NoSuchTool",
        "--system-prompt",
        "ALWAYS ANSWER IN CAPITALS",
        "--append-system-prompt",
        "SIGN AS KETCH",
        "--max-turns",
        "1",
    )
    payload = json.loads(proc.stdout)
    request = headless.requests()[0]
    offered = sorted(t["name"] for t in request["tools"])
    assert offered == ["glob", "read_file"]
    assert "ALWAYS ANSWER IN CAPITALS" in request["system"] and request["system"].rstrip().endswith(
        "SIGN AS KETCH"
    )
    assert payload["subtype"] == "error_max_turns" and payload["is_error"] is True
    assert proc.returncode == 1
    assert "NoSuchTool" in proc.stderr


def test_add_dir_lets_a_headless_turn_read_there(headless: Headless, tmp_path: Path) -> None:
    shared = tmp_path / "shared-lib"
    shared.mkdir()
    (shared / "api.md").write_text("SHARED-API-DOC\n", encoding="utf-8")
    steps = [
        {"tool_calls": [{"name": "read_file", "input": {"path": str(shared / "api.md")}}]},
        {"text": "read"},
    ]
    headless.script(steps)
    without = headless.run("-p", "read it", "--output-format", "stream-json")
    results = [json.loads(x) for x in without.stdout.splitlines() if '"tool_result"' in x]
    assert (
        "SHARED-API-DOC" not in results[0]["output"]
    )  # outside the workspace: asked, no one to ask
    headless.script(steps)
    proc = headless.run("-p", "read it", "--output-format", "stream-json", "--add-dir", str(shared))
    results = [json.loads(x) for x in proc.stdout.splitlines() if '"tool_result"' in x]
    assert "SHARED-API-DOC" in results[0]["output"]


def test_mcp_config_problems_are_said(headless: Headless) -> None:
    config = {
        "mcpServers": {"needs-token": {"command": "srv", "args": ["${NO_SUCH_VAR_FOR_KETCH}"]}}
    }
    headless.script([{"text": "ok"}])
    proc = headless.run("-p", "hi", "--mcp-config", json.dumps(config))
    assert proc.returncode == 0, proc.stderr
    assert "NO_SUCH_VAR_FOR_KETCH" in proc.stderr and "skipped" in proc.stderr


def test_settings_deny_rule_acts_and_the_rest_is_said(headless: Headless) -> None:
    (headless.workspace / "secrets").mkdir()
    (headless.workspace / "secrets" / "k.txt").write_text("CANARY-KEY\n", encoding="utf-8")
    steps = [
        {"tool_calls": [{"name": "read_file", "input": {"path": "secrets/k.txt"}}]},
        {"text": "ok"},
    ]
    settings = {"permissions": {"deny": ["Read(./secrets/**)"]}, "sandbox": {"enabled": True}}
    headless.script(steps)
    proc = headless.run(
        "-p",
        "read",
        "--output-format",
        "stream-json",
        "--profile",
        "full-access",
        "--settings",
        json.dumps(settings),
    )
    results = [json.loads(x) for x in proc.stdout.splitlines() if '"tool_result"' in x]
    assert results and results[0]["ok"] is False and "CANARY-KEY" not in proc.stdout
    assert "CANARY-KEY" not in json.dumps(headless.requests())
    assert "--settings: sandbox: ketch has no such setting" in proc.stdout
