"""Subagents through the real command line (``ketch -p``, stream-json), the scripted
model answering each session by the task it was given (``when``), real tools and the
real policy, judged by effects: files written or not, requests the model received."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ketch.testing import call, calls, text
from tests.agents.conftest import Cli, clean, first_prompt, requests_for, tool_names

RUN = ("--provider", "scripted", "--output-format", "stream-json")


def agent(prompt: str, description: str = "a task", **extra: Any) -> tuple[str, dict[str, Any]]:
    return ("agent", {"description": description, "prompt": prompt, **extra})


def when(marker: str, step: dict[str, Any]) -> dict[str, Any]:
    return {**step, "when": marker}


def results_of(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results of the last message of a logged request, in order."""
    return [p for p in request["messages"][-1]["parts"] if p["type"] == "tool_result"]


def subagent_ids(events: list[dict[str, Any]]) -> list[str]:
    return [
        e["subagent_id"] for e in events if e["type"] == "subagent" and e["status"] == "started"
    ]


def test_a_child_of_a_manual_headless_parent_cannot_write(cli: Cli) -> None:
    script = [
        when("PARENT", call(*agent("CHILD write inside.txt", "write a file"))),
        when("CHILD", call("write_file", {"path": "inside.txt", "content": "x"})),
        when("CHILD", text("I could not write it")),
        when("PARENT", text("parent done")),
    ]
    result = cli("-p", "PARENT go", *RUN, script=script)
    clean(result)
    assert result.returncode == 0
    assert not (cli.workspace / "inside.txt").exists()
    (child,) = subagent_ids(result.events)
    asks = [e for e in result.of_type("permission") if e.get("agent_id") == child]
    assert asks and asks[0]["decision"] == "ask" and asks[0]["approved"] is False
    (answer,) = results_of(requests_for(result, "PARENT")[-1])
    assert "I could not write it" in answer["output"] and "Files it changed" not in answer["output"]


def test_a_full_access_child_writes_inside_the_workspace_but_not_outside(cli: Cli) -> None:
    outside = cli.tmp / "outside.txt"
    script = [
        when("PARENT", call(*agent("CHILD write two files"))),
        when(
            "CHILD",
            calls(
                ("write_file", {"path": "inside.txt", "content": "in"}),
                ("write_file", {"path": str(outside), "content": "out"}),
            ),
        ),
        when("CHILD", text("wrote what I could")),
        when("PARENT", text("parent done")),
    ]
    result = cli("-p", "PARENT go", *RUN, "--profile", "full-access", script=script)
    clean(result)
    assert (cli.workspace / "inside.txt").read_text() == "in"
    assert not outside.exists()
    (answer,) = results_of(requests_for(result, "PARENT")[-1])
    assert (
        "Files it changed:\n- inside.txt" in answer["output"]
        and str(outside) not in answer["output"]
    )


def test_two_agent_calls_run_side_by_side_and_return_in_call_order(cli: Cli) -> None:
    script = [
        when("PARENT", calls(agent("TASK-A: the slow one"), agent("TASK-B: the quick one"))),
        when("TASK-A", text("result A", delay=1.2)),
        when("TASK-B", text("result B", delay=0.2)),
        when("PARENT", text("both done")),
    ]
    result = cli("-p", "PARENT go", *RUN, script=script)
    clean(result)
    assert result.returncode == 0
    (a,), (b,) = requests_for(result, "TASK-A"), requests_for(result, "TASK-B")
    # B's request arrived while A's was still being answered (A takes 1.2 s): they overlapped.
    assert (
        b["received_at"] < a["received_at"] + 1.2
        and a["received_at"] < b["received_at"] + 0.2 + 1.2
    )
    finished = [e["name"] for e in result.of_type("subagent") if e["status"] == "finished"]
    assert len(finished) == 2
    last = requests_for(result, "PARENT")[-1]
    call_ids = [p["id"] for p in last["messages"][-2]["parts"] if p["type"] == "tool_call"]
    answers = results_of(last)
    assert [r["tool_call_id"] for r in answers] == call_ids
    assert (
        "result A" in answers[0]["output"] and "result B" in answers[1]["output"]
    )  # call order, not finishing order
    # Every event of a child carries its agent_id; the root's carry none.
    ids = set(subagent_ids(result.events))
    child_events = [e for e in result.events if "agent_id" in e]
    assert {e["agent_id"] for e in child_events} == ids
    assert {"session", "message", "usage", "turn_end"} <= {e["type"] for e in child_events}
    assert (
        [e["type"] for e in result.events if "agent_id" not in e][0] == "session"
        and result.events[-1]["type"] == "turn_end"
        and "agent_id" not in result.events[-1]
    )


def test_a_child_sees_neither_the_parents_history_nor_the_agent_tool(cli: Cli) -> None:
    (cli.workspace / "notes.txt").write_text("HISTORY-CANARY in a file the parent read\n")
    script = [
        when("PARENT", call("read_file", {"path": "notes.txt"})),
        when("PARENT", call(*agent("CHILD summarize the repository"))),
        when("CHILD", text("child answer")),
        when("PARENT", text("done")),
    ]
    result = cli("-p", "PARENT PROMPT-CANARY", *RUN, script=script)
    clean(result)
    (child,) = requests_for(result, "CHILD summarize")
    body = json.dumps(child)
    assert "PROMPT-CANARY" not in body and "HISTORY-CANARY" not in body
    assert [m["role"] for m in child["messages"]] == ["user"] and first_prompt(
        child
    ) == "CHILD summarize the repository"
    assert "agent" not in tool_names(child) and "read_file" in tool_names(child)
    assert "agent" in tool_names(requests_for(result, "PARENT")[0])
    assert "You are a subagent" in child["system"]


def test_plan_mode_offers_a_child_no_mutating_tool(cli: Cli) -> None:
    script = [
        when("PARENT", call(*agent("CHILD change things"))),
        when("CHILD", call("write_file", {"path": "planned.txt", "content": "x"})),
        when("CHILD", text("could not")),
        when("PARENT", text("done")),
    ]
    result = cli(
        "-p", "PARENT go", *RUN, "--mode", "plan", "--profile", "full-access", script=script
    )
    clean(result)
    assert not (cli.workspace / "planned.txt").exists()
    offered = tool_names(requests_for(result, "CHILD")[0])
    assert offered and not offered & {"write_file", "edit_file", "shell", "stamp", "agent"}
    refusal = next(
        e for e in result.of_type("tool_result") if e.get("agent_id") and e["name"] == "write_file"
    )
    assert refusal["outcome"] == "refused" and "plan mode" in refusal["output"]


def test_definitions_from_claude_agents_narrow_tools_and_add_instructions(cli: Cli) -> None:
    project = cli.workspace / ".claude" / "agents"
    project.mkdir(parents=True)
    (project / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews changes for bugs.\ntools: Read, Grep\nmodel: sonnet\n---\nREVIEWER-INSTRUCTIONS: be strict.\n"
    )
    user = cli.home / ".claude" / "agents"
    user.mkdir(parents=True)
    (user / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: SHADOWED user reviewer\n---\nno\n"
    )
    (user / "helper.md").write_text(
        "---\nname: helper\ndescription: Helps with chores.\n---\nHELPER\n"
    )
    (cli.workspace / ".ketch" / "agents").mkdir(parents=True)
    (cli.workspace / ".ketch" / "agents" / "broken.md").write_text(
        "---\nname: [not, a, name\n---\nbody\n"
    )
    script = [
        when("PARENT", call(*agent("CHILD review the change", agent="reviewer"))),
        when("CHILD", call("write_file", {"path": "reviewed.txt", "content": "x"})),
        when("CHILD", text("looks fine")),
        when("PARENT", text("done")),
    ]
    assert cli("trust", "--yes").returncode == 0  # the project's definitions, once trusted
    result = cli("-p", "PARENT go", *RUN, "--profile", "full-access", script=script)
    clean(result)
    description = next(
        t for t in requests_for(result, "PARENT")[0]["tools"] if t["name"] == "agent"
    )["description"]
    assert (
        "reviewer: Reviews changes for bugs." in description
        and "helper: Helps with chores." in description
    )
    assert "SHADOWED" not in description and "explore" in description
    assert any("broken.md" in n["message"] for n in result.of_type("notice"))
    (child,) = requests_for(result, "CHILD")[:1]
    assert tool_names(child) == {"read_file", "grep"}
    assert "REVIEWER-INSTRUCTIONS" in child["system"]
    assert not (cli.workspace / "reviewed.txt").exists()  # a narrowed tool is not there to call
    started = next(e for e in result.of_type("subagent") if e["status"] == "started")
    assert started["name"] == "reviewer"


def test_max_concurrent_bounds_the_children_running_at_once(cli: Cli) -> None:
    cli.config("[agents]\nmax_concurrent = 1\n")
    script = [
        when("PARENT", calls(agent("TASK-A"), agent("TASK-B"))),
        when("TASK-A", text("A", delay=0.6)),
        when("TASK-B", text("B", delay=0.6)),
        when("PARENT", text("done")),
    ]
    result = cli("-p", "PARENT go", *RUN, script=script)
    clean(result)
    (a,), (b,) = requests_for(result, "TASK-A"), requests_for(result, "TASK-B")
    first, second = sorted((a["received_at"], b["received_at"]))
    assert second >= first + 0.6  # one after the other


def test_each_child_has_its_own_step_limit(cli: Cli) -> None:
    cli.config("[agents]\nmax_iterations = 2\n")
    (cli.workspace / "a.txt").write_text("a")
    script = [
        when("PARENT", call(*agent("CHILD loop"))),
        *[
            when("CHILD", call("slow_read", {"path": "a.txt", "seconds": i / 100}))
            for i in range(4)
        ],
        when("PARENT", text("done")),
    ]
    result = cli("-p", "PARENT go", *RUN, script=script)
    clean(result)
    assert len(requests_for(result, "CHILD")) == 2
    child_end = next(e for e in result.of_type("turn_end") if e.get("agent_id"))
    assert child_end["stop_reason"] == "max_iterations"
    (answer,) = results_of(requests_for(result, "PARENT")[-1])
    assert answer["ok"] is False and "reached its step limit" in answer["output"]
    assert (
        result.events[-1]["type"] == "turn_end" and result.events[-1]["stop_reason"] == "end_turn"
    )


def test_a_background_child_reports_at_the_parents_next_step(cli: Cli) -> None:
    (cli.workspace / "a.txt").write_text("a")
    script = [
        when(
            "PARENT",
            call(*agent("BG-TASK dig in the background", "background digging", background=True)),
        ),
        when("BG-TASK", text("BG-RESULT: found it", delay=1.0)),
        when("PARENT", call("slow_read", {"path": "a.txt", "seconds": 0})),
        when("PARENT", text("meanwhile I did other things")),
        when("PARENT", text("got the background result")),
    ]
    result = cli("-p", "PARENT go", *RUN, script=script)
    clean(result)
    assert result.returncode == 0
    parent = requests_for(result, "PARENT")
    (child,) = requests_for(result, "BG-TASK")
    started = results_of(parent[1])[0]
    assert "in the background" in started["output"]
    assert (
        parent[1]["received_at"] < child["received_at"] + 1.0
    )  # the parent went on while the child worked
    delivered = parent[-1]["messages"][-1]
    assert delivered["role"] == "user" and "BG-RESULT: found it" in json.dumps(delivered)
    assert result.events[-1]["text"] == "got the background result"
    assert any("background agent" in n["message"] for n in result.of_type("notice"))


def test_children_are_stored_encrypted_under_the_parent_and_shown(cli: Cli) -> None:
    script = [
        when("PARENT", call(*agent("CHILD-TASK-CANARY look around", "look around"))),
        when("CHILD-TASK-CANARY", text("CHILD-ANSWER-CANARY")),
        when("PARENT", text("parent done")),
    ]
    result = cli("-p", "PARENT go", *RUN, script=script)
    clean(result)
    session_id = result.of_type("session")[0]["session_id"]
    listed = cli("sessions", "list", "--json")
    assert [s["id"] for s in json.loads(listed.stdout)] == [session_id]
    shown = cli("sessions", "show", session_id)
    clean(shown)
    assert "subagent general-purpose" in shown.stdout and "look around" in shown.stdout
    assert "CHILD-TASK-CANARY" in shown.stdout and "CHILD-ANSWER-CANARY" in shown.stdout
    exported = json.loads(cli("sessions", "export", session_id, "--format", "json").stdout)
    (child,) = exported["subagents"]
    assert child["name"] == "general-purpose" and child["stop_reason"] == "end_turn"
    assert [m["role"] for m in child["transcript"]] == ["user", "assistant"]
    markdown = cli("sessions", "export", session_id).stdout
    assert "## Subagent general-purpose" in markdown and "CHILD-ANSWER-CANARY" in markdown
    database = Path(cli.env["KETCH_STATE_DIR"]) / "sessions.db"
    raw = b"".join(p.read_bytes() for p in database.parent.glob("sessions.db*"))
    assert (
        b"CHILD-TASK-CANARY" not in raw and b"CHILD-ANSWER-CANARY" not in raw
    )  # sealed like every entry
    # Resuming brings back what the child returned, not the child.
    again = cli("-p", "PARENT next", *RUN, "--continue", script=[when("PARENT", text("resumed"))])
    clean(again)
    (request,) = again.requests
    assert "CHILD-ANSWER-CANARY" in json.dumps(request["messages"])
    assert not subagent_ids(again.events) and all("agent_id" not in e for e in again.events)
