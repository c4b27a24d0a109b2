"""SubagentStart and SubagentStop user hooks, and tool hooks inside a subagent,
through the real CLI."""

from __future__ import annotations

import json
import sys
from typing import Any

from ketch.testing import call, text
from tests.agents.conftest import Cli, clean, requests_for

RUN = ("--provider", "scripted", "--output-format", "stream-json")


def when(marker: str, step: dict[str, Any]) -> dict[str, Any]:
    return {**step, "when": marker}


def hook_script(cli: Cli, name: str, answer: dict[str, Any] | None) -> str:
    """A hook (Python, as people write them) that keeps its stdin and prints ``answer``."""
    path = cli.tmp / f"{name}.py"
    keep = cli.tmp / f"{name}.jsonl"
    path.write_text(
        "import json, sys\n"
        f"open({str(keep)!r}, 'a').write(sys.stdin.read().strip() + '\\n')\n"
        + (f"print(json.dumps({answer!r}))\n" if answer else "")
    )
    return f"{sys.executable} {path}"


def inputs(cli: Cli, name: str) -> list[dict[str, Any]]:
    keep = cli.tmp / f"{name}.jsonl"
    return [json.loads(line) for line in keep.read_text().splitlines()] if keep.exists() else []


def test_subagent_start_and_stop_hooks_fire_with_the_agents_name(cli: Cli) -> None:
    agents = cli.workspace / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews.\n---\nReview.\n"
    )
    start = hook_script(
        cli,
        "start",
        {
            "hookSpecificOutput": {
                "hookEventName": "SubagentStart",
                "additionalContext": "START-CONTEXT: the tests are in tests/",
            }
        },
    )
    stop = hook_script(cli, "stop", None)
    other = hook_script(cli, "other", None)
    pre = hook_script(cli, "pre", None)
    cli.config(
        f'[[hooks.SubagentStart]]\nmatcher = "reviewer"\ncommand = {json.dumps(start)}\n'
        f'[[hooks.SubagentStart]]\nmatcher = "explore"\ncommand = {json.dumps(other)}\n'
        f'[[hooks.SubagentStop]]\nmatcher = "reviewer"\ncommand = {json.dumps(stop)}\n'
        f'[[hooks.PreToolUse]]\nmatcher = "Read"\ncommand = {json.dumps(pre)}\n'
    )
    (cli.workspace / "a.txt").write_text("a")
    assert cli("trust", "--yes").returncode == 0  # the project's reviewer, once trusted
    script = [
        when(
            "PARENT",
            call(
                "agent", {"description": "review it", "prompt": "CHILD review", "agent": "reviewer"}
            ),
        ),
        when("CHILD", call("read_file", {"path": "a.txt"})),
        when("CHILD", text("REVIEW: all good")),
        when("PARENT", text("done")),
    ]
    result = cli("-p", "PARENT go", *RUN, script=script)
    clean(result)
    session_id = result.of_type("session")[0]["session_id"]
    started = next(e for e in result.of_type("subagent") if e["status"] == "started")
    (began,) = inputs(cli, "start")
    assert began["hook_event_name"] == "SubagentStart" and began["agent_type"] == "reviewer"
    assert began["agent_id"] == started["subagent_id"] and began["session_id"] == session_id
    assert not inputs(cli, "other")  # its matcher names another agent
    (ended,) = inputs(cli, "stop")
    assert ended["hook_event_name"] == "SubagentStop" and ended["agent_type"] == "reviewer"
    assert (
        ended["last_assistant_message"] == "REVIEW: all good"
        and ended["agent_id"] == started["subagent_id"]
    )
    assert "START-CONTEXT" in json.dumps(requests_for(result, "CHILD review")[0]["messages"][0])
    (pre_input,) = inputs(cli, "pre")  # a tool hook inside the subagent knows whose call it is
    assert pre_input["tool_name"] == "read_file" and pre_input["agent_type"] == "reviewer"
    assert pre_input["agent_id"] == started["subagent_id"] and pre_input["session_id"] == session_id


def test_a_subagent_stop_hook_can_keep_the_subagent_going_once(cli: Cli) -> None:
    stop = cli.tmp / "stop.sh"
    stop.write_text("#!/bin/sh\ncat > /dev/null\necho 'also check the docs' >&2\nexit 2\n")
    stop.chmod(0o755)
    cli.config(f"[[hooks.SubagentStop]]\ncommand = {json.dumps(str(stop))}\n")
    script = [
        when("PARENT", call("agent", {"description": "d", "prompt": "CHILD work"})),
        when("CHILD", text("first answer")),
        when("CHILD", text("second answer, docs checked")),
        when("PARENT", text("done")),
    ]
    result = cli("-p", "PARENT go", *RUN, script=script)
    clean(result)
    child = requests_for(result, "CHILD work")
    assert len(child) == 2 and "also check the docs" in json.dumps(child[1]["messages"][-1])
    output = requests_for(result, "PARENT")[-1]["messages"][-1]["parts"][0]["output"]
    assert "second answer, docs checked" in output
