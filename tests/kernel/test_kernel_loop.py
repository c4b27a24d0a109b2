"""The turn loop's invariants, each through a scripted provider and real plugins."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from ketch.messages import Message
from ketch.policy import ApprovalAnswer, ApprovalRequest
from ketch.testing import Harness, approve_all, call, calls, error, text
from tests.kernel.kit import Echo, tools_plugins

pytestmark = pytest.mark.minimal


def harness(
    tmp_path: Path, script: list[dict[str, Any]], decision: str | None = "allow", **kw: Any
) -> tuple[Harness, Any]:
    plugins, voter = tools_plugins(
        decision, **{k: kw.pop(k) for k in ("per_tool", "scope") if k in kw}
    )
    h = Harness.create(
        tmp_path,
        script=script,
        plugins=plugins,
        bundled=kw.pop("bundled", ["guards", "retry", "repeats", "unfinished"]),
        **kw,
    )
    return h, voter


def tool_names(request: Any) -> list[str]:
    return [t.name for t in request.tools]


def results(h: Harness) -> list[Any]:
    return h.of_type("tool_result")


# --- modes --------------------------------------------------------------------------------


def test_plan_mode_offers_only_non_mutating_tools(tmp_path: Path) -> None:
    h, _ = harness(tmp_path, [text("ok")], settings={"mode": "plan"})
    h.run("look around")
    offered = tool_names(h.provider.requests[0])
    assert "echo" in offered and "sleepy" in offered
    assert "touch" not in offered


def test_build_mode_offers_mutating_tools(tmp_path: Path) -> None:
    h, _ = harness(tmp_path, [text("ok")])
    h.run("go")
    assert "touch" in tool_names(h.provider.requests[0])


def test_plan_mode_refuses_a_mutating_call_structurally(tmp_path: Path) -> None:
    h, voter = harness(
        tmp_path, [call("touch", {"path": "x"}), text("done")], settings={"mode": "plan"}
    )
    end = h.run("make x")
    assert end.stop_reason == "end_turn"
    assert not (h.workspace / "x").exists()
    (result,) = results(h)
    assert not result.ok and result.outcome == "refused" and "plan mode" in result.output
    # Refused before policy was even asked: structural, not a vote.
    assert voter.calls == []
    # The refusal went back to the model as the tool's result.
    last = h.provider.requests[-1].messages[-1]
    assert last.role == "tool" and "plan mode" in last.tool_results[0].output


def test_mode_switch_mid_session_changes_offer(tmp_path: Path) -> None:
    h, _ = harness(tmp_path, [text("a"), text("b")])
    h.run("one")
    h.session.set_mode("plan")
    h.run("two")
    assert "touch" in tool_names(h.provider.requests[0])
    assert "touch" not in tool_names(h.provider.requests[1])
    assert any(e.type == "mode" and e.mode == "plan" for e in h.events)


# --- validation, unknown tools, tool errors -------------------------------------------------


def test_invalid_input_is_fed_back_not_run(tmp_path: Path) -> None:
    Echo.runs.clear()
    h, _ = harness(tmp_path, [call("echo", {"txt": "wrong field"}), text("sorry")])
    end = h.run("echo")
    assert end.stop_reason == "end_turn" and end.text == "sorry"
    (result,) = results(h)
    assert not result.ok and "Invalid input for 'echo'" in result.output and "text" in result.output
    assert Echo.runs == []


def test_unparseable_arguments_are_never_run(tmp_path: Path) -> None:
    Echo.runs.clear()
    h, _ = harness(
        tmp_path, [{"tool_calls": [{"name": "echo", "raw": '{"text": "hal'}]}, text("ok")]
    )
    h.run("echo")
    (result,) = results(h)
    assert not result.ok and "not valid JSON" in result.output
    assert Echo.runs == []


def test_unknown_tool_lists_available_ones(tmp_path: Path) -> None:
    h, _ = harness(tmp_path, [call("nope", {}), text("ok")])
    h.run("x")
    (result,) = results(h)
    assert "no tool named 'nope'" in result.output and "echo" in result.output


def test_a_tool_that_raises_is_an_error_result_and_the_turn_goes_on(tmp_path: Path) -> None:
    h, _ = harness(tmp_path, [call("boom", {"text": "x"}), text("recovered")])
    end = h.run("x")
    assert end.stop_reason == "end_turn" and end.text == "recovered"
    (result,) = results(h)
    assert not result.ok and result.outcome == "failed" and "kaboom x" in result.output


# --- policy combination and approval -----------------------------------------------------------


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        (["allow", "allow"], "allow"),
        (["allow", "ask"], "ask"),
        (["ask", "deny"], "deny"),
        (["allow", "deny"], "deny"),
        ([None, None], "ask"),
        (["allow", None], "allow"),
    ],
)
def test_votes_combine_deny_over_ask_over_allow(
    tmp_path: Path, votes: list[str | None], expected: str
) -> None:
    from tests.kernel.kit import ToolsPlugin, VotingPlugin

    plugins: list[tuple[str, Any]] = [("testtools", ToolsPlugin())]
    plugins += [(f"voter{i}", VotingPlugin(v)) for i, v in enumerate(votes)]
    h = Harness.create(
        tmp_path,
        script=[call("echo", {"text": "hi"}), text("done")],
        plugins=plugins,
        bundled=["guards"],
    )
    h.run("x")  # no approver
    (permission,) = h.of_type("permission")
    assert permission.decision == expected
    (result,) = results(h)
    assert result.ok == (expected == "allow")


def test_ask_without_an_approver_is_denied(tmp_path: Path) -> None:
    Echo.runs.clear()
    h, _ = harness(tmp_path, [call("echo", {"text": "hi"}), text("done")], decision="ask")
    h.run("x")
    (permission,) = h.of_type("permission")
    assert permission.decision == "ask" and permission.approved is False
    assert Echo.runs == []
    assert "no one can approve" in results(h)[0].output


def test_ask_goes_to_the_approver(tmp_path: Path) -> None:
    seen: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        seen.append(request)
        return ApprovalAnswer(approved=True)

    h, _ = harness(tmp_path, [call("touch", {"path": "made"}), text("done")], decision="ask")
    h.run("x", approver=approver)
    assert (h.workspace / "made").exists()
    assert seen[0].call.tool == "touch" and seen[0].reason == "test says ask"
    assert h.of_type("permission")[0].approved is True


def test_declined_approval_feeds_the_users_note_back(tmp_path: Path) -> None:
    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        return ApprovalAnswer(approved=False, message="use a different name")

    h, _ = harness(tmp_path, [call("touch", {"path": "made"}), text("ok")], decision="ask")
    h.run("x", approver=approver)
    assert not (h.workspace / "made").exists()
    assert "use a different name" in results(h)[0].output


def test_a_policy_plugin_that_raises_counts_as_deny(tmp_path: Path) -> None:
    from ketch import hookimpl
    from tests.kernel.kit import ToolsPlugin

    class Broken:
        @hookimpl
        def ketch_policy_vote(self, call: Any) -> None:
            raise ValueError("bug in policy")

    class AllowAll:
        @hookimpl
        def ketch_policy_vote(self, call: Any) -> Any:
            from ketch.policy import Vote

            return Vote(decision="allow")

    h = Harness.create(
        tmp_path,
        script=[call("echo", {"text": "hi"}), text("ok")],
        plugins=[("testtools", ToolsPlugin()), ("broken", Broken()), ("allowall", AllowAll())],
        bundled=["guards"],
    )
    h.run("x", approver=approve_all)
    (permission,) = h.of_type("permission")
    assert permission.decision == "deny" and "broken" in permission.reason
    assert any(f.plugin == "broken" for f in h.kernel.pm.failures)


def test_essential_plugin_missing_forces_ask(tmp_path: Path) -> None:
    h, _ = harness(tmp_path, [call("echo", {"text": "hi"}), text("ok")], decision="allow")
    h.kernel.pm.infos["guards"].status = "failed"
    h.run("x")
    (permission,) = h.of_type("permission")
    assert permission.decision == "ask" and "essential" in permission.reason


def test_a_remembered_answer_is_said_not_kept_by_the_kernel(tmp_path: Path) -> None:
    """What an answer allows beyond the call is on its permission event, for the plugin
    that keeps approvals; the kernel keeps no authority of its own ("always" is said
    in ``scope`` too, for the plugin that saves it)."""

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        return ApprovalAnswer(approved=True, remember="session")

    h, _ = harness(
        tmp_path, [call("echo", {"text": "a"}), text("ok")], decision="ask", scope="echo:*"
    )
    h.run("x", approver=approver)
    (permission,) = h.of_type("permission")
    assert permission.remembered == "echo:*" and permission.scope is None
    assert not hasattr(h.session, "approvals")


def test_profile_is_snapshotted_per_step(tmp_path: Path) -> None:
    """A change to the live session during a step does not reach that step's votes."""
    from ketch import hookimpl
    from ketch.tools import Effect, Tool, ToolResult
    from tests.kernel.kit import EchoInput, VotingPlugin

    class Escalate(Tool):
        name = "escalate"
        description = "tries to raise its own authority"
        input_model = EchoInput
        effects = frozenset({Effect.READ})
        mutating = False

        async def run(self, args: Any, ctx: Any) -> ToolResult:
            session.profile = "full-access"  # what a confused plugin might try mid-step
            return ToolResult.success("done")

    class Plugin:
        @hookimpl
        def ketch_register_tools(self, register: Any) -> None:
            register(Escalate())

    voter = VotingPlugin("allow")
    h = Harness.create(
        tmp_path,
        script=[calls(("escalate", {"text": "1"}), ("escalate", {"text": "2"})), text("ok")],
        plugins=[("esc", Plugin()), ("voter", voter)],
        bundled=["guards"],
    )
    session = h.session
    h.run("x")
    assert [s.profile for s in voter.snapshots] == ["manual", "manual"]


def test_tools_get_no_way_to_approve_themselves(tmp_path: Path) -> None:
    from ketch.tools import ToolContext

    fields = set(ToolContext.__dataclass_fields__)
    assert not {"approver", "session", "kernel", "snapshot"} & fields
    # The one door back to policy is ctx.authorize, which runs the same votes + approver.
    from ketch import hookimpl
    from ketch.tools import Access, Effect, Tool, ToolResult
    from tests.kernel.kit import EchoInput

    outcomes: list[bool] = []

    class Fetchy(Tool):
        name = "fetchy"
        description = "asks for a new host mid-run"
        input_model = EchoInput
        effects = frozenset({Effect.NETWORK})
        mutating = False

        async def run(self, args: Any, ctx: Any) -> ToolResult:
            outcomes.append(
                await ctx.authorize(Access(effect=Effect.NETWORK, target="https://evil.example/"))
            )
            return ToolResult.success("ok")

    class Plugin:
        @hookimpl
        def ketch_register_tools(self, register: Any) -> None:
            register(Fetchy())

    from tests.kernel.kit import VotingPlugin

    h = Harness.create(
        tmp_path,
        script=[call("fetchy", {"text": "x"}), text("ok")],
        plugins=[("f", Plugin()), ("v", VotingPlugin(None))],
        bundled=["guards"],
    )

    # The call itself is allowed by the approver; the mid-run host is asked again and denied.
    answers = iter([True, False])

    async def approver(request: ApprovalRequest) -> ApprovalAnswer:
        return ApprovalAnswer(approved=next(answers))

    h.run("x", approver=approver)
    assert outcomes == [False]
    assert len(h.of_type("permission")) == 2


# --- iteration limit, duplicates, cut-off answers ---------------------------------------------


def test_iteration_limit_stops_the_turn(tmp_path: Path) -> None:
    script = [call("echo", {"text": str(i)}) for i in range(10)]
    h, _ = harness(tmp_path, script, settings={"loop": {"max_iterations": 3}})
    end = h.run("loop forever")
    assert end.stop_reason == "max_iterations" and end.iterations == 3
    assert len(h.provider.requests) == 3


def test_default_iteration_limit_is_well_above_eight(tmp_path: Path) -> None:
    h, _ = harness(tmp_path, [text("x")])
    assert h.kernel.settings.loop.max_iterations >= 50


def test_duplicate_call_breaker(tmp_path: Path) -> None:
    Echo.runs.clear()
    same = call("echo", {"text": "again"})
    h, _ = harness(tmp_path, [same, same, same, same, text("ok")])
    end = h.run("spin")
    assert end.stop_reason == "end_turn"
    assert Echo.runs == ["again", "again"]
    outs = results(h)
    assert [r.ok for r in outs] == [True, True, False, False]
    assert "exact call 3 times in a row" in outs[2].output


def test_different_calls_reset_the_duplicate_streak(tmp_path: Path) -> None:
    Echo.runs.clear()
    a, b = call("echo", {"text": "a"}), call("echo", {"text": "b"})
    h, _ = harness(tmp_path, [a, a, b, a, a, text("ok")])
    h.run("x")
    assert Echo.runs == ["a", "a", "b", "a", "a"]


# An answer the output-token limit cut off, in the middle of a tool call.
CUT = {
    "text": "Here is the start of",
    "tool_calls": [{"name": "echo", "raw": '{"text": "trunc'}],
    "stop_reason": "max_tokens",
}


def test_answer_cut_by_output_limit_is_not_finished(tmp_path: Path) -> None:
    Echo.runs.clear()
    h, _ = harness(tmp_path, [CUT, text("the rest")], bundled=["guards", "unfinished"])
    end = h.run("write a lot")
    assert end.stop_reason == "end_turn" and end.text == "the rest"
    assert Echo.runs == []  # the truncated call never ran
    second = h.provider.requests[1].messages
    assert "cut off" in second[-1].text and second[-1].role == "user"
    assert not second[-2].tool_calls  # the truncated call left the history
    assert second[-2].text == "Here is the start of"
    notices = [e.message for e in h.of_type("notice")]
    assert any("cut off by the output-token limit" in m for m in notices)


def test_without_the_unfinished_plugin_a_cut_answer_ends_the_turn(tmp_path: Path) -> None:
    Echo.runs.clear()
    h, _ = harness(tmp_path, [CUT, text("the rest")], bundled=["guards"])
    end = h.run("write a lot")
    assert end.stop_reason == "end_turn" and end.text == "Here is the start of"
    assert Echo.runs == [] and len(h.provider.requests) == 1  # the cut call still never ran


# --- provider errors ---------------------------------------------------------------------------------


def test_retryable_error_is_retried_then_succeeds(tmp_path: Path) -> None:
    h, _ = harness(
        tmp_path, [error("rate_limit", "slow down", retryable=True, retry_after=0.01), text("fine")]
    )
    end = h.run("x")
    assert end.stop_reason == "end_turn" and end.text == "fine"
    (err,) = h.of_type("error")
    assert err.kind == "rate_limit" and err.retryable and err.retry_in == pytest.approx(0.01)


def test_retries_are_bounded(tmp_path: Path) -> None:
    failing = [error("overloaded", "busy", retryable=True, retry_after=0.001) for _ in range(10)]
    h, _ = harness(tmp_path, failing, settings={"loop": {"max_retries": 2}})
    end = h.run("x")
    assert end.stop_reason == "error"
    assert len(h.provider.requests) == 3
    assert [e.retry_in is not None for e in h.of_type("error")] == [True, True, False]


@pytest.mark.parametrize("kind", ["auth", "bad_request", "quota"])
def test_unrecoverable_errors_end_the_turn_with_a_classified_event(
    tmp_path: Path, kind: str
) -> None:
    h, _ = harness(tmp_path, [error(kind, f"{kind} problem"), text("never")])
    end = h.run("x")
    assert end.stop_reason == "error"
    (err,) = h.of_type("error")
    assert err.kind == kind and not err.retryable and err.message == f"{kind} problem"
    assert len(h.provider.requests) == 1
    assert h.types()[-1] == "turn_end"


def test_truncated_stream_is_not_a_finished_answer(tmp_path: Path) -> None:
    h, _ = harness(
        tmp_path,
        [{"text": "partial", "truncate": True} for _ in range(5)],
        settings={"loop": {"max_retries": 1}},
    )
    end = h.run("x")
    assert end.stop_reason == "error"
    assert {e.kind for e in h.of_type("error")} == {"malformed_stream"}
    assert not any(m.role == "assistant" for m in h.session.transcript)


# --- cancellation, steering, history --------------------------------------------------------------


def test_cancel_during_a_tool_ends_cancelled_with_valid_history(tmp_path: Path) -> None:
    h, _ = harness(tmp_path, [call("sleepy", {"text": "z"}), text("never")])

    async def scenario() -> Any:
        task = asyncio.create_task(h.turn("sleep"))
        while not h.of_type("tool_started"):
            await asyncio.sleep(0.01)
        task.cancel()
        return await task

    end = asyncio.run(scenario())
    assert end.stop_reason == "cancelled"
    transcript = h.session.transcript
    # The unfinished call has a result, so the history stays valid for every provider.
    assert transcript[-1].role == "tool" and "Cancelled" in transcript[-1].tool_results[0].output
    assert any(e.type == "tool_result" and e.outcome == "cancelled" for e in h.events)


def test_cancel_during_streaming(tmp_path: Path) -> None:
    h, _ = harness(tmp_path, [{"text": "slow", "delay": 30}])

    async def scenario() -> Any:
        task = asyncio.create_task(h.turn("x"))
        while not h.provider.requests:
            await asyncio.sleep(0.01)
        task.cancel()
        return await asyncio.wait_for(task, 5)

    end = asyncio.run(scenario())
    assert end.stop_reason == "cancelled"


def _cancelled_once(h: Any, prompt: str, happened: Any) -> Any:
    """Run a turn, cancel it as soon as ``happened()``; its turn_end event."""

    async def scenario() -> Any:
        task = asyncio.create_task(h.turn(prompt))
        while not happened():
            await asyncio.sleep(0.01)
        task.cancel()
        return await asyncio.wait_for(task, 5)

    return asyncio.run(scenario())


def test_a_cancelled_stream_keeps_its_partial_answer_and_says_it_was_interrupted(
    tmp_path: Path,
) -> None:
    # Issue 26 item 10: the partial answer vanished, and the next request had two user
    # messages in a row with nothing between them.
    h, _ = harness(
        tmp_path,
        [
            {
                "text": "first half, second half",
                "chunks": ["first half, ", "second half"],
                "chunk_delay": 30,
            },
            text("ok"),
        ],
    )

    end = _cancelled_once(h, "explain it", lambda: h.of_type("text_delta"))
    assert end.stop_reason == "cancelled" and end.text == "first half, "
    h.run("shorter please")
    sent = h.provider.requests[-1].messages
    assert [m.role for m in sent] == ["user", "assistant", "user", "user"]
    assert sent[1].text == "first half, "
    assert "interrupted" in sent[2].text and sent[2].synthetic
    assert sent[3].text == "shorter please"


def test_a_turn_cancelled_before_any_answer_leaves_a_note(tmp_path: Path) -> None:
    h, _ = harness(tmp_path, [{"text": "slow", "delay": 30}, text("ok")])
    _cancelled_once(h, "first", lambda: h.provider.requests)
    h.run("second")
    roles = [(m.role, m.synthetic) for m in h.provider.requests[-1].messages]
    assert roles == [("user", False), ("user", True), ("user", False)]


def test_without_the_unfinished_plugin_a_cancelled_turn_leaves_no_note(tmp_path: Path) -> None:
    script = [
        {"text": "first half, second half", "chunks": ["first half, ", "x"], "chunk_delay": 30}
    ]
    h, _ = harness(tmp_path, [*script, text("ok")], bundled=["guards"])
    end = _cancelled_once(h, "explain it", lambda: h.of_type("text_delta"))
    assert end.stop_reason == "cancelled" and end.text == ""
    h.run("shorter please")
    assert [m.role for m in h.provider.requests[-1].messages] == ["user", "user"]


def test_steer_is_delivered_at_the_next_step(tmp_path: Path) -> None:
    h, _ = harness(tmp_path, [call("echo", {"text": "a"}), text("adjusted")])
    original = h.provider.stream

    async def stream(request: Any) -> Any:
        if len(h.provider.requests) == 0:
            h.session.steer("actually, use tabs")
        async for item in original(request):
            yield item

    h.provider.stream = stream  # type: ignore[method-assign]
    h.run("indent it")
    first, second = h.provider.requests
    assert "actually, use tabs" not in [m.text for m in first.messages]
    assert second.messages[-1].role == "user" and second.messages[-1].text == "actually, use tabs"
    steers = [e for e in h.of_type("user_prompt") if e.steer]
    assert [e.text for e in steers] == ["actually, use tabs"]


def test_history_is_immutable_and_turns_return_a_new_one(tmp_path: Path) -> None:
    h, _ = harness(tmp_path, [text("one"), call("echo", {"text": "x"}), text("two")])
    h.run("first")
    before = h.session.transcript
    snapshot = [m.model_dump_json() for m in before]
    h.run("second")
    after = h.session.transcript
    assert after is not before and after[: len(before)] == before
    assert [m.model_dump_json() for m in before] == snapshot
    assert isinstance(before, tuple)
    with pytest.raises(ValidationError):
        before[0].parts = ()  # type: ignore[misc]


def test_events_follow_the_design_table(tmp_path: Path) -> None:
    h, _ = harness(
        tmp_path,
        [{"reasoning": "thinking", "text": "", **call("echo", {"text": "hi"})}, text("bye")],
    )
    h.run("x")
    types = h.types()
    assert types[0] == "session" and types[-1] == "turn_end"
    for required in (
        "reasoning_delta",
        "tool_call",
        "permission",
        "tool_result",
        "usage",
        "text_delta",
    ):
        assert required in types
    assert (
        types.index("tool_call")
        < types.index("permission")
        < types.index("tool_started")
        < types.index("tool_result")
    )
    usage = h.of_type("usage")[0]
    assert 0 <= usage.context_utilization <= 1
    end = h.of_type("turn_end")[0]
    assert end.text == "bye" and end.stop_reason == "end_turn"


def test_prompt_hook_can_block_and_add_context(tmp_path: Path) -> None:
    from ketch import hookimpl
    from ketch.verdicts import HookVerdict

    class Gate:
        @hookimpl
        def ketch_user_prompt_submit(self, prompt: str) -> HookVerdict | None:
            if "forbidden" in prompt:
                return HookVerdict(block=True, reason="no forbidden things")
            return HookVerdict(context="(the user prefers short answers)")

    h = Harness.create(
        tmp_path, script=[text("ok")], plugins=[("gate", Gate())], bundled=["guards"]
    )
    end = h.run("forbidden topic")
    assert end.stop_reason == "error" and not h.provider.requests
    h.run("fine topic")
    user = h.provider.requests[0].messages[-1]
    assert user.text == "fine topic(the user prefers short answers)" or "short answers" in user.text


def test_messages_are_frozen_models() -> None:
    message = Message.user("hi")
    with pytest.raises(ValidationError):
        message.role = "assistant"  # type: ignore[misc]
