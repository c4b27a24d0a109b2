"""The Agent SDK program's hook callbacks, called at ketch's lifecycle events.

The program registers them in ``initialize`` (per event: a matcher and callback ids);
ketch calls each matching one with a ``hook_callback`` control request whose ``input``
is the JSON a Claude Code hook gets (Claude Code's tool names: ``Bash``, ``Write``),
and reads its answer exactly as it reads a hook command's JSON
(:mod:`ketch_claude_kit.hook_answers`): a PreToolUse ``deny`` refuses the call, an
``allow`` spares a question the policy would ask but never overrides a deny rule, a
hard guard or plan mode, ``updatedInput`` is validated and voted on again; a Stop block
keeps the turn going. A callback that fails or times out is reported and does not block.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ketch_claude_kit import hook_answers as meaning
from ketch_claude_kit import hook_payload
from ketch_claude_kit.hook_matcher import matches
from ketch_claude_kit.tool_names import names_for, shown_name
from ketch_headless.control import CHANNEL, ControlChannel, ControlError

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import HookVerdict, ProposedCall, Session, ToolResult

EVENTS = frozenset(
    {
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "Stop",
        "SubagentStart",
        "SubagentStop",
        "Notification",
        "PreCompact",
        "PostCompact",
    }
)


def channel_for(session: Session, event: str) -> ControlChannel | None:
    """The channel, when the program registered callbacks for ``event``."""
    channel = session.kernel.stash.get(CHANNEL)
    if channel is None or not any(m.event == event for m in channel.hooks):
        return None
    return channel


async def call(
    channel: ControlChannel,
    event: str,
    data: dict[str, Any],
    names: tuple[str, ...] | None = None,
    tool_use_id: str | None = None,
) -> list[meaning.HookAnswer]:
    """Every matching callback of ``event``, side by side; problems are reported."""
    chosen = [
        (m, callback)
        for m in channel.hooks
        if m.event == event and matches(m.matcher, names)
        for callback in m.callback_ids
    ]

    async def one(timeout: float, callback: str) -> meaning.HookAnswer:
        label = f"SDK callback {callback}"
        body = {
            "subtype": "hook_callback",
            "callback_id": callback,
            "input": data,
            "tool_use_id": tool_use_id,
        }
        try:
            return meaning.from_json(label, await channel.request(body, timeout))
        except ControlError as exc:
            return meaning.from_json(label, None, problem=f"failed ({exc}); not blocking")

    answers = list(await asyncio.gather(*(one(m.timeout, c) for m, c in chosen)))
    for answer in answers:
        if answer.problem:
            channel.notice(f"{event} hook `{answer.label}` {answer.problem}")
        if answer.system_message:
            channel.notice(answer.system_message)
    return answers


def _tool_data(session: Session, event: str, proposed: ProposedCall) -> dict[str, Any]:
    data = hook_payload.common(session, event)
    data["tool_name"] = shown_name(proposed.tool)
    data["ketch_tool_name"] = proposed.tool
    data["tool_input"] = hook_payload.tool_input(session.workspace, proposed.tool, proposed.input)
    data["tool_use_id"] = proposed.id
    return data


async def pre_tool_use(session: Session, proposed: ProposedCall) -> HookVerdict | None:
    channel = channel_for(session, "PreToolUse")
    if channel is None:
        return None
    answers = await call(
        channel,
        "PreToolUse",
        _tool_data(session, "PreToolUse", proposed),
        names_for(proposed.tool),
        proposed.id,
    )
    verdict, updated = meaning.pre_tool_use(answers)
    if updated is None:
        return verdict
    from dataclasses import replace

    from ketch.api import HookVerdict

    new = hook_payload.updated_input(session.workspace, proposed.tool, proposed.input, updated)
    return replace(verdict, updated_input=new) if verdict else HookVerdict(updated_input=new)


async def after_tool_use(
    session: Session, proposed: ProposedCall, result: ToolResult
) -> HookVerdict | None:
    event = "PostToolUse" if result.ok else "PostToolUseFailure"
    channel = channel_for(session, event)
    if channel is None:
        return None
    data = _tool_data(session, event, proposed)
    if result.ok:
        data["tool_response"] = {"success": True, "output": result.output}
    else:
        data["error"] = result.output
        data["is_interrupt"] = False
    answers = await call(channel, event, data, names_for(proposed.tool), proposed.id)
    return meaning.after_tool_use(answers)


async def prompt_submit(session: Session, prompt: str) -> HookVerdict | None:
    channel = channel_for(session, "UserPromptSubmit")
    if channel is None or session.parent is not None:
        return None
    data = {**hook_payload.common(session, "UserPromptSubmit"), "prompt": prompt}
    return meaning.prompt_submit(await call(channel, "UserPromptSubmit", data))


async def stop(session: Session, text: str, stop_hook_active: bool) -> HookVerdict | None:
    channel = channel_for(session, "Stop")
    if channel is None or session.parent is not None:
        return None
    data = {
        **hook_payload.common(session, "Stop"),
        "stop_hook_active": stop_hook_active,
        "last_assistant_message": text,
    }
    return meaning.keeps_going(await call(channel, "Stop", data))


def _agent_data(session: Session, event: str, agent: Any) -> dict[str, Any]:
    return {
        **hook_payload.common(session, event),
        "agent_id": agent.id,
        "agent_type": agent.name,
    }


async def subagent_start(session: Session, agent: Any) -> HookVerdict | None:
    channel = channel_for(session, "SubagentStart")
    if channel is None:
        return None
    answers = await call(
        channel, "SubagentStart", _agent_data(session, "SubagentStart", agent), (agent.name,)
    )
    context = meaning.added_context(answers)
    if not context:
        return None
    from ketch.api import HookVerdict

    return HookVerdict(context=context)


async def subagent_stop(session: Session, agent: Any, result: str) -> HookVerdict | None:
    channel = channel_for(session, "SubagentStop")
    if channel is None:
        return None
    data = {
        **_agent_data(session, "SubagentStop", agent),
        "stop_hook_active": False,
        "last_assistant_message": result,
    }
    return meaning.keeps_going(await call(channel, "SubagentStop", data, (agent.name,)))


async def notification(session: Session, message: str, kind: str) -> None:
    channel = channel_for(session, "Notification")
    if channel is None:
        return
    kind_name = {"permission": "permission_prompt", "idle": "idle_prompt"}.get(kind, kind)
    data = {
        **hook_payload.common(session, "Notification"),
        "message": message,
        "title": "ketch",
        "notification_type": kind_name,
    }
    await call(channel, "Notification", data, (kind_name,))


def compaction(session: Session, event: str, fields: dict[str, Any]) -> None:
    """PreCompact / PostCompact: told, not waited for (they cannot block in ketch)."""
    channel = channel_for(session, event)
    if channel is None:
        return
    data = {**hook_payload.common(session, event), **fields}
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    task = loop.create_task(call(channel, event, data, (str(fields.get("trigger")),)))
    channel._tasks.add(task)
    task.add_done_callback(channel._tasks.discard)
