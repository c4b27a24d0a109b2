"""Subagents in-process: asks go to the parent's approver (one at a time, naming the
subagent), cancelling the parent's turn cancels every child, SIGINT through the CLI."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ketch import hookimpl
from ketch.policy import ApprovalAnswer, ApprovalRequest
from ketch.providers import ProviderKind
from ketch.testing import Harness, ScriptedProvider, call, calls, text
from ketch_policy_kit.approvals import session_approvals
from tests.agents.conftest import SCRIPTED, Cli
from tests.trust.pins import trust_all

PLUGINS = ["guards", "policy", "fs", "agents", "concurrent_calls"]


def when(marker: str, step: dict[str, Any]) -> dict[str, Any]:
    return {**step, "when": marker}


def agent(prompt: str, description: str = "a task") -> tuple[str, dict[str, Any]]:
    return ("agent", {"description": description, "prompt": prompt})


def test_asks_go_to_the_parents_approver_one_at_a_time_naming_the_subagent(tmp_path: Path) -> None:
    script = [
        when(
            "PARENT",
            calls(agent("TASK-A write a.txt", "write a"), agent("TASK-B write b.txt", "write b")),
        ),
        when("TASK-A", call("write_file", {"path": "a.txt", "content": "A"})),
        when("TASK-B", call("write_file", {"path": "b.txt", "content": "B"})),
        when("TASK-A", text("wrote a")),
        when("TASK-B", text("wrote b")),
        when("PARENT", text("done")),
    ]
    h = Harness.create(tmp_path, script=script, bundled=PLUGINS)
    seen: list[ApprovalRequest] = []
    state = {"active": 0, "most": 0}

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        state["active"] += 1
        state["most"] = max(state["most"], state["active"])
        seen.append(request)
        await asyncio.sleep(0.2)
        state["active"] -= 1
        return ApprovalAnswer(approved=True)

    end = h.run("PARENT go", approver=approver)
    assert end.stop_reason == "end_turn"
    assert (h.workspace / "a.txt").read_text() == "A" and (h.workspace / "b.txt").read_text() == "B"
    assert sorted(r.agent or "" for r in seen) == [
        "general-purpose: write a",
        "general-purpose: write b",
    ]
    assert {r.call.tool for r in seen} == {"write_file"}
    assert state["most"] == 1  # the person is asked one question at a time
    results = h.provider.requests[-1].messages[-1].tool_results
    assert (
        "Files it changed:\n- a.txt" in results[0].output
        and "Files it changed:\n- b.txt" in results[1].output
    )


def test_an_allow_for_the_session_in_a_child_holds_for_the_parent(tmp_path: Path) -> None:
    script = [
        when("PARENT", call(*agent("TASK write a.txt"))),
        when("TASK", call("write_file", {"path": "a.txt", "content": "A"})),
        when("TASK", text("ok")),
        when(
            "PARENT", call("read_file", {"path": "a.txt"})
        ),  # (write_file wants a changed file read first)
        when("PARENT", call("write_file", {"path": "a.txt", "content": "B"})),
        when("PARENT", text("done")),
    ]
    h = Harness.create(tmp_path, script=script, bundled=PLUGINS)
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer(approved=True, remember="session")

    h.run("PARENT go", approver=approver)
    assert (h.workspace / "a.txt").read_text() == "B"
    assert len(asked) == 1 and asked[0].agent  # the parent's own write was not asked again
    assert session_approvals(h.session)  # the one list both share


def _cancel_when(h: Harness, requests: int) -> Any:
    async def scenario() -> Any:
        task = asyncio.ensure_future(h.turn("PARENT go"))
        while len(h.provider.requests) < requests:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        task.cancel()
        return await task

    return asyncio.run(scenario())


def test_cancelling_the_turn_cancels_a_running_child(tmp_path: Path) -> None:
    script = [
        when("PARENT", call(*agent("TASK think for long"))),
        when("TASK", text("too late", delay=30)),
        when("PARENT", text("must never be asked")),
    ]
    h = Harness.create(tmp_path, script=script, bundled=PLUGINS)
    started = time.monotonic()
    end = _cancel_when(h, 2)
    assert end.stop_reason == "cancelled" and time.monotonic() - started < 10
    assert len(h.provider.requests) == 2  # the parent did not go on after the cancel
    ends = [e for e in h.events if e.type == "turn_end"]
    assert [(e.agent_id is not None, e.stop_reason) for e in ends] == [
        (True, "cancelled"),
        (False, "cancelled"),
    ]
    (result,) = h.session.transcript[-1].tool_results
    assert not result.ok and "Cancelled" in result.output


def test_cancelling_the_turn_cancels_every_child_of_a_step(tmp_path: Path) -> None:
    script = [
        when("PARENT", calls(agent("TASK-A"), agent("TASK-B"))),
        when("TASK-A", text("A", delay=30)),
        when("TASK-B", text("B", delay=30)),
        when("PARENT", text("must never be asked")),
    ]
    h = Harness.create(tmp_path, script=script, bundled=PLUGINS)
    end = _cancel_when(h, 3)
    assert end.stop_reason == "cancelled" and len(h.provider.requests) == 3
    child_ends = [e.stop_reason for e in h.events if e.type == "turn_end" and e.agent_id]
    assert child_ends == ["cancelled", "cancelled"]


def test_sigint_through_the_cli_cancels_the_children(cli: Cli) -> None:
    script = [
        when("PARENT", call(*agent("TASK wait"))),
        when("TASK", text("too late", delay=30)),
        when("PARENT", text("must never be asked")),
    ]
    scratch = cli.tmp / "sigint"
    scratch.mkdir()
    (scratch / "script.json").write_text(json.dumps(script))
    log = scratch / "requests.jsonl"
    env = {
        **os.environ,
        **cli.env,
        "KETCH_LOAD": f"{cli.env['KETCH_LOAD']},{SCRIPTED}",
        "KETCH_SCRIPT": str(scratch / "script.json"),
        "KETCH_SCRIPT_LOG": str(log),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ketch",
            "-p",
            "PARENT go",
            "--provider",
            "scripted",
            "--output-format",
            "stream-json",
        ],
        cwd=cli.workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (
        not log.exists() or len(log.read_text().splitlines()) < 2
    ):
        time.sleep(0.05)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    ends = [(("agent_id" in e), e["stop_reason"]) for e in events if e["type"] == "turn_end"]
    assert ends == [(True, "cancelled"), (False, "cancelled")]
    assert len(log.read_text().splitlines()) == 2


def test_a_definitions_model_runs_on_the_parents_provider_and_explore_only_reads(
    tmp_path: Path,
) -> None:
    scripts: dict[str, list[dict[str, Any]]] = {
        "big-model": [
            when(
                "PARENT",
                calls(
                    agent("TASK-S summarize", "small"),
                    ("agent", {"description": "look", "prompt": "TASK-E look", "agent": "explore"}),
                ),
            ),
            when("TASK-E", text("explored")),
            when("PARENT", text("done")),
        ],
        "small-model": [text("summary from the small model")],
    }
    built: list[ScriptedProvider] = []

    def create(config: Any, key: Any) -> ScriptedProvider:
        provider = ScriptedProvider(
            scripts[config.model], name=config.name, model=config.model, config=config
        )
        built.append(provider)
        return provider

    class Kind:
        @hookimpl
        def ketch_register_providers(self, register: Any) -> None:
            register(
                ProviderKind(
                    kind="recorded", create=create, needs_key=False, default_model="big-model"
                )
            )

    agents = tmp_path / "ws" / ".ketch" / "agents"
    agents.mkdir(parents=True)
    (agents / "summarizer.md").write_text(
        "---\nname: summarizer\ndescription: Summarizes.\nmodel: haiku\n---\nBe brief.\n"
    )
    config = '[providers.recorded]\nkind = "recorded"\nmodel = "big-model"\n[agents.models]\nhaiku = "small-model"\n'
    h = Harness.create(
        tmp_path,
        bundled=PLUGINS,
        plugins=[("recorded", Kind())],
        config=config,
        provider_name="recorded",
    )
    trust_all(h)  # a project's definition is offered once the person trusted it
    scripts["big-model"][0]["tool_calls"][0]["input"]["agent"] = "summarizer"
    end = h.run("PARENT go")
    assert end.stop_reason == "end_turn" and end.text == "done"
    parent, small = built[0], next(p for p in built if p.model == "small-model")
    (request,) = small.requests
    assert (
        request.model == "small-model"
        and request.messages[0].text.startswith("TASK-S")
        and small.closed == 1
    )
    explore = next(r for r in parent.requests if r.messages[0].text.startswith("TASK-E"))
    offered = {t.name for t in explore.tools}
    assert (
        offered
        and all(not h.kernel.tools[name].mutating for name in offered)
        and "read_file" in offered
    )
    results = parent.requests[-1].messages[-1].tool_results
    assert "summary from the small model" in results[0].output and "explored" in results[1].output
