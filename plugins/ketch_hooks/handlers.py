"""One function per event: run its hooks, report what went wrong, and turn their
answers into what the kernel expects (a :class:`ketch.verdicts.HookVerdict`).

What each event honours (Claude Code's contract; ``continue: false`` and
``systemMessage`` everywhere they make sense):

* PreToolUse: exit 2 or ``permissionDecision: "deny"`` refuses the call (the reason
  goes to the model); ``"ask"`` (and ``"defer"``) makes it ask; ``"allow"`` spares
  the person a question the policy would have asked, and never overrides a deny rule,
  a hard guard or plan mode (the kernel sees to that); ``updatedInput`` replaces the
  input, which is validated and voted on again.
* PostToolUse / PostToolUseFailure: exit 2's stderr, ``decision: "block"``'s reason
  and ``additionalContext`` go to the model beside the result.
* UserPromptSubmit: exit 2 or ``decision: "block"`` drops the prompt (the reason is
  shown); ``additionalContext`` and plain stdout go to the model with the prompt.
* SessionStart: ``additionalContext`` and plain stdout go with the next prompt.
* Stop / SubagentStop: exit 2 or ``decision: "block"`` keeps the (sub)agent going once
  with the reason as its next instruction.
* SubagentStart: ``additionalContext`` goes to the subagent with its task.
* SessionEnd, Notification, PreCompact, PostCompact: reported only (they cannot
  block in ketch).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ketch.api import HookVerdict, NoticeEvent
from ketch_claude_kit import hook_answers as meaning
from ketch_claude_kit.tool_names import names_for
from ketch_hooks import background, payload
from ketch_hooks.output import Answer, read
from ketch_hooks.runner import run_event

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ProposedCall, Session, ToolResult, TurnEndEvent
    from ketch_context_kit.compaction import CompactionResult
    from ketch_hooks.settings import HookCommand

# ketch's notification kinds in Claude Code's words (the Notification matcher).
NOTIFICATION_TYPES = {"permission": "permission_prompt", "idle": "idle_prompt"}
SESSION_END_REASONS = frozenset({"clear", "resume", "logout", "prompt_input_exit", "other"})


async def _answers(
    session: Session,
    event: str,
    make: Any,
    names: tuple[str, ...] | None = None,
    *,
    blocking: bool = True,
    quiet: bool = False,
) -> list[Answer]:
    """Run the event's hooks and report problems; ``make(hook)`` builds each one's input.
    ``blocking``: whether exit 2 means something for this event (else it is reported)."""
    runs = await run_event(
        session,
        event,
        make,
        names,
        detach=lambda work: background.detach(session, _reported(session, event, work, quiet)),
    )
    answers = [read(run) for run in runs]
    if not quiet:
        report(session, event, answers, blocking=blocking)
    return answers


async def _reported(session: Session, event: str, work: Any, quiet: bool) -> None:
    answer = read(await work)  # an ``async`` hook: nobody reads its answer, problems are still said
    if not quiet:
        report(session, event, [answer], blocking=False)


def report(session: Session, event: str, answers: list[Answer], *, blocking: bool = True) -> None:
    """Tell the person what they should know: failures, timeouts, ``systemMessage``s,
    and, for events that cannot block, what a hook said on exit 2."""
    emit = session.kernel.emit
    for answer in answers:
        if answer.problem:
            tail = "; the turn goes on" if not answer.finished else ""
            emit(
                session,
                NoticeEvent(
                    level="warning",
                    message=f"{event} hook `{answer.label}` {answer.problem}{tail}",
                ),
            )
        if answer.system_message:
            emit(session, NoticeEvent(level="info", message=answer.system_message))
        if answer.blocks and not blocking and answer.stderr:
            emit(
                session,
                NoticeEvent(
                    level="warning", message=f"{event} hook `{answer.label}`: {answer.stderr}"
                ),
            )


def _simple(session: Session, event: str, **fields: Any) -> Any:
    data = {**payload.common(session, event), **fields}
    return lambda hook: data


# --- tool calls -------------------------------------------------------------------------


async def pre_tool_use(session: Session, call: ProposedCall) -> HookVerdict | None:
    answers = await _answers(
        session,
        "PreToolUse",
        lambda hook: payload.tool_call(session, "PreToolUse", call, hook),
        names_for(call.tool),
    )
    if not answers:
        return None
    verdict, updated = meaning.pre_tool_use(answers)
    if updated is None:
        return verdict
    new_input = payload.updated_input(session, call.tool, call.input, updated)
    if verdict is None:
        return HookVerdict(updated_input=new_input)
    return replace(verdict, updated_input=new_input)


async def post_tool_use(
    session: Session, call: ProposedCall, result: ToolResult, duration_ms: int | None
) -> HookVerdict | None:
    event = "PostToolUse" if result.ok else "PostToolUseFailure"

    def make(hook: HookCommand) -> dict[str, Any]:
        data = payload.tool_call(session, event, call, hook)
        if result.ok:
            data["tool_response"] = {"success": True, "output": result.output}
        else:
            data["error"] = result.output
            data["is_interrupt"] = False
        if duration_ms is not None:
            data["duration_ms"] = duration_ms
        data["ok"], data["output"] = result.ok, result.output
        return data

    answers = await _answers(session, event, make, names_for(call.tool))
    return meaning.after_tool_use(answers)


# --- prompts and turns ----------------------------------------------------------------------


async def user_prompt_submit(session: Session, prompt: str) -> HookVerdict | None:
    answers = await _answers(
        session, "UserPromptSubmit", _simple(session, "UserPromptSubmit", prompt=prompt)
    )
    verdict = meaning.prompt_submit(answers)
    if verdict is not None and verdict.stop:
        session.kernel.emit(
            session,
            NoticeEvent(
                level="warning",
                message=f"a UserPromptSubmit hook ended the turn: {verdict.stop_reason or 'continue: false'}",
            ),
        )
    return verdict


async def stop(
    session: Session, event: TurnEndEvent, stop_hook_active: bool = False
) -> HookVerdict | None:
    fields = {
        "stop_hook_active": stop_hook_active,
        "last_assistant_message": event.text,
        "stop_reason": event.stop_reason,
        "text": event.text,
    }
    return meaning.keeps_going(await _answers(session, "Stop", _simple(session, "Stop", **fields)))


# --- subagents ------------------------------------------------------------------------------


def _agent_fields(agent: Any) -> dict[str, Any]:
    return {"agent_id": agent.id, "agent_type": agent.name, "agent_description": agent.description}


async def subagent_start(session: Session, agent: Any) -> HookVerdict | None:
    answers = await _answers(
        session,
        "SubagentStart",
        _simple(session, "SubagentStart", **_agent_fields(agent)),
        (agent.name,),
        blocking=False,
    )
    context = meaning.added_context(answers)
    return HookVerdict(context=context) if context else None


async def subagent_stop(session: Session, agent: Any, result: str) -> HookVerdict | None:
    fields = {**_agent_fields(agent), "stop_hook_active": False, "last_assistant_message": result}
    return meaning.keeps_going(
        await _answers(
            session, "SubagentStop", _simple(session, "SubagentStop", **fields), (agent.name,)
        )
    )


# --- the session ---------------------------------------------------------------------------------


async def session_start(session: Session) -> str:
    """The context SessionStart hooks give the model (with the next prompt)."""
    source = "resume" if session.resumed else "startup"
    answers = await _answers(
        session,
        "SessionStart",
        _simple(session, "SessionStart", source=source, model=session.model),
        (source,),
        blocking=False,
    )
    return meaning.added_context(answers, plain_text=True)


async def session_end(session: Session, reason: str, *, quiet: bool) -> None:
    claude_reason = reason if reason in SESSION_END_REASONS else "other"
    await _answers(
        session,
        "SessionEnd",
        _simple(session, "SessionEnd", reason=claude_reason, ketch_reason=reason),
        (claude_reason,),
        blocking=False,
        quiet=quiet,
    )


async def notification(session: Session, message: str, kind: str) -> None:
    kind_name = NOTIFICATION_TYPES.get(kind, kind)
    fields = {"message": message, "title": "ketch", "notification_type": kind_name}
    await _answers(
        session,
        "Notification",
        _simple(session, "Notification", **fields),
        (kind_name,),
        blocking=False,
    )


def _trigger(reason: str) -> str:
    return "manual" if reason == "command" else "auto"


async def pre_compact(session: Session, reason: str) -> None:
    trigger = _trigger(reason)
    fields = {"trigger": trigger, "custom_instructions": "", "ketch_reason": reason}
    await _answers(
        session, "PreCompact", _simple(session, "PreCompact", **fields), (trigger,), blocking=False
    )


async def post_compact(session: Session, result: CompactionResult) -> None:
    from ketch_context_kit.compaction import records

    done = records(session.state)
    reason = str(done[-1].get("reason", "auto")) if done else "auto"
    trigger = _trigger(reason)
    fields = {
        "trigger": trigger,
        "compact_summary": result.summary,
        "ketch_reason": reason,
        "before_tokens": result.before_tokens,
        "after_tokens": result.after_tokens,
    }
    await _answers(
        session,
        "PostCompact",
        _simple(session, "PostCompact", **fields),
        (trigger,),
        blocking=False,
    )
