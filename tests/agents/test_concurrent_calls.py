"""Read-only calls of one response run side by side; a mutating call keeps its place
and runs alone; results go back in call order. Through the real CLI: the test tools
log when each call really started and finished."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from ketch import hookimpl
from ketch.calls import RunningCall, running_call
from ketch.errors import KetchError
from ketch.policy import Vote
from ketch.testing import Harness, approve_all, calls, text
from ketch.tools import DELEGATES, Effect, Tool, ToolContext, ToolResult
from tests.agents.conftest import Cli, clean

RUN = ("--provider", "scripted", "--output-format", "stream-json")


def overlap(runs: list[dict[str, Any]]) -> bool:
    """All these runs were going on at one moment."""
    return max(r["start"] for r in runs) < min(r["end"] for r in runs)


def setup(cli: Cli) -> None:
    for name in "abcd":
        (cli.workspace / f"{name}.txt").write_text(f"content of {name}\n")


def test_three_read_only_calls_run_side_by_side_with_results_in_call_order(cli: Cli) -> None:
    setup(cli)
    script = [
        calls(
            ("slow_read", {"path": "a.txt", "seconds": 0.9}),
            ("slow_read", {"path": "b.txt", "seconds": 0.5}),
            ("slow_read", {"path": "c.txt", "seconds": 0.1}),
        ),
        text("read them"),
    ]
    result = cli("-p", "read three files", *RUN, script=script)
    clean(result)
    assert result.returncode == 0
    runs = cli.tool_runs()
    assert [r["path"] for r in runs] == [
        "c.txt",
        "b.txt",
        "a.txt",
    ]  # they finished quickest first...
    assert overlap(runs)
    outputs = [p["output"] for p in result.requests[-1]["messages"][-1]["parts"]]
    assert outputs == [
        "content of a\n",
        "content of b\n",
        "content of c\n",
    ]  # ...and came back in call order
    started = [e["tool_call_id"] for e in result.of_type("tool_started")]
    assert len(started) == 3


def test_without_the_concurrent_calls_plugin_each_call_runs_alone_with_the_same_results(
    cli: Cli,
) -> None:
    setup(cli)
    script = [
        calls(
            ("slow_read", {"path": "a.txt", "seconds": 0.3}),
            ("slow_read", {"path": "b.txt", "seconds": 0.2}),
            ("slow_read", {"path": "c.txt", "seconds": 0.1}),
        ),
        text("read them"),
    ]
    result = cli("-p", "read", *RUN, "--no-plugin", "concurrent_calls", script=script)
    clean(result)
    assert result.returncode == 0
    runs = cli.tool_runs()
    assert [r["path"] for r in runs] == ["a.txt", "b.txt", "c.txt"]  # one after another
    for earlier, later in zip(runs, runs[1:], strict=False):
        assert earlier["end"] <= later["start"]
    outputs = [p["output"] for p in result.requests[-1]["messages"][-1]["parts"]]
    assert outputs == ["content of a\n", "content of b\n", "content of c\n"]


def test_a_mutating_call_keeps_its_place_and_runs_alone(cli: Cli) -> None:
    setup(cli)
    script = [
        calls(
            ("slow_read", {"path": "a.txt", "seconds": 0.4}),
            ("slow_read", {"path": "b.txt", "seconds": 0.4}),
            ("stamp", {"path": "stamped.txt", "seconds": 0.3}),
            ("slow_read", {"path": "c.txt", "seconds": 0.4}),
            ("slow_read", {"path": "d.txt", "seconds": 0.4}),
        ),
        text("done"),
    ]
    result = cli("-p", "read, stamp, read", *RUN, "--profile", "full-access", script=script)
    clean(result)
    runs = {r["path"]: r for r in cli.tool_runs()}
    before, stamp, after = (
        [runs["a.txt"], runs["b.txt"]],
        runs["stamped.txt"],
        [runs["c.txt"], runs["d.txt"]],
    )
    assert overlap(before) and overlap(after)
    assert max(r["end"] for r in before) <= stamp["start"] and stamp["end"] <= min(
        r["start"] for r in after
    )
    names = [p["name"] for p in result.requests[-1]["messages"][-1]["parts"]]
    assert names == ["slow_read", "slow_read", "stamp", "slow_read", "slow_read"]
    assert (cli.workspace / "stamped.txt").exists()


def test_a_read_only_call_that_needs_approval_is_decided_before_the_batch_runs(cli: Cli) -> None:
    setup(cli)
    outside = cli.tmp / "outside.txt"
    outside.write_text("outside\n")
    script = [
        calls(
            ("slow_read", {"path": "a.txt", "seconds": 0.3}),
            ("slow_read", {"path": str(outside), "seconds": 0.3}),
            ("slow_read", {"path": "b.txt", "seconds": 0.3}),
        ),
        text("done"),
    ]
    result = cli(
        "-p", "read", *RUN, script=script
    )  # manual: reading outside the workspace asks; headless: denied
    clean(result)
    runs = cli.tool_runs()
    assert sorted(r["path"] for r in runs) == ["a.txt", "b.txt"] and overlap(runs)
    parts = result.requests[-1]["messages"][-1]["parts"]
    assert [p["ok"] for p in parts] == [True, False, True]


# --- in-process: what the pipeline guarantees around calls running together -------------


class WaitInput(BaseModel):
    label: str
    seconds: float = 0


class Waiter(Tool):
    """A read-only tool that sleeps ``seconds`` and says whether it saw running_call()."""

    name = "waiter"
    description = "wait"
    input_model = WaitInput
    effects = frozenset({Effect.READ})
    mutating = False
    finished: ClassVar[list[str]] = []
    scopes: ClassVar[list[object]] = []

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        Waiter.scopes.append(running_call())
        await asyncio.sleep(args.seconds)
        Waiter.finished.append(args.label)
        return ToolResult.success(args.label)


class Delegator(Waiter):
    name = "delegator"
    capabilities = frozenset({DELEGATES})


class Plugin:
    @hookimpl
    def ketch_register_tools(self, register: Any) -> None:
        register(Waiter())
        register(Delegator())

    @hookimpl
    def ketch_policy_vote(self, call: Any) -> Vote:
        return Vote(decision="allow", reason="test tools")

    @hookimpl
    def ketch_after_tool_use(self, call: Any, result: Any) -> None:
        if result.output == "fail-the-turn":
            raise KetchError("the store could not record it")


def harness(tmp_path: Path, script: list[dict[str, Any]]) -> Harness:
    Waiter.finished.clear()
    Waiter.scopes.clear()
    return Harness.create(
        tmp_path,
        script=script,
        plugins=[("waiting", Plugin())],
        bundled=["guards", "concurrent_calls"],
    )


def test_when_one_of_the_calls_running_together_fails_the_turn_the_others_are_cancelled(
    tmp_path: Path,
) -> None:
    h = harness(
        tmp_path,
        [
            calls(
                ("waiter", {"label": "slow", "seconds": 5}),
                ("waiter", {"label": "fail-the-turn", "seconds": 0}),
            ),
            text("never"),
        ],
    )
    began = time.monotonic()
    end = h.run("x")
    assert end.stop_reason == "error" and time.monotonic() - began < 4
    assert Waiter.finished == [
        "fail-the-turn"
    ]  # the slow one never finished: cancelled, not left running
    types = [(e.type, getattr(e, "outcome", None)) for e in h.events]
    assert types.index(("tool_result", "cancelled")) < types.index(
        ("turn_end", None)
    )  # ended before the turn did
    assert len(h.provider.requests) == 1


def test_only_a_delegating_tool_learns_the_calls_session_and_approver(tmp_path: Path) -> None:
    h = harness(
        tmp_path,
        [
            calls(
                ("waiter", {"label": "a", "seconds": 0}),
                ("delegator", {"label": "b", "seconds": 0}),
            ),
            text("ok"),
        ],
    )
    h.run("x", approver=approve_all)
    plain, delegating = Waiter.scopes
    assert plain is None
    assert (
        isinstance(delegating, RunningCall)
        and delegating.session is h.session
        and delegating.approver is approve_all
    )
    assert running_call() is None  # nothing leaks out of the call
