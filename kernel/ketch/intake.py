"""Taking in what the person typed: the prompt that starts a turn, and steers typed
while it runs (delivered at the next step).

Every prompt goes through ``ketch_user_prompt_submit`` first: a hook may block it
(the reason is shown), add context for the model, or end the turn. Then plugins may
attach parts to it (``ketch_expand_prompt``: ``@file`` mentions); reading what is
attached is still an action with effects, so the tool calls they make for it go
through the same path as the model's (the mode, the policy and the approver, the
hooks, the journal, the events): :class:`PromptIntake`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ketch.events import ErrorEvent, MessageEvent, NoticeEvent, UserPromptEvent
from ketch.messages import Message, Part, TextPart

if TYPE_CHECKING:  # pragma: no cover
    from ketch.session import Session
    from ketch.tools import ToolResult


@dataclass(frozen=True)
class PromptIntake:
    """What ``ketch_expand_prompt`` gets: run tool calls on the user's behalf while their
    prompt is taken in, and tell the user something."""

    call_tool: Callable[[str, dict[str, Any]], Awaitable[ToolResult]]
    notice: Callable[[str], None]
    has_tool: Callable[[str], bool]


@dataclass(frozen=True)
class Accepted:
    ok: bool
    stop: bool = False  # a hook asked to end the turn (``continue: false``)
    reason: str = ""


async def accept_prompt(
    session: Session,
    prompt: str,
    *,
    steer: bool,
    parts: tuple[Part, ...] = (),
    expand: Callable[[str], Awaitable[list[Part]]] | None = None,
) -> Accepted:
    """Run the prompt hooks and append the prompt (with any context they add).

    ``parts`` are attachments that go with the prompt text (files, images); ``expand``
    adds the ones plugins attach (``ketch_expand_prompt``), once the prompt got through."""
    kernel = session.kernel
    verdicts = await kernel.hooks.values_async(
        "ketch_user_prompt_submit", session=session, prompt=prompt
    )
    for verdict in verdicts:
        if verdict.system_message:
            kernel.emit(session, NoticeEvent(level="info", message=verdict.system_message))
    blocked = [v for v in verdicts if v.block]
    if blocked:
        reason = "; ".join(v.reason for v in blocked if v.reason) or "blocked by a hook"
        kernel.emit(
            session,
            ErrorEvent(kind="blocked", retryable=False, message=f"prompt blocked: {reason}"),
        )
        return Accepted(False, reason=reason)
    kernel.emit(session, UserPromptEvent(text=prompt, steer=steer))
    if expand is not None and not steer:
        parts = (*parts, *await expand(prompt))
    content: list[Part] = [TextPart(text=prompt), *parts]
    content += [TextPart(text=v.context) for v in verdicts if v.context]
    # A steer is part of the running turn, not a turn of its own (synthetic: it is no
    # prompt to number, rewind to or answer separately).
    message = Message(role="user", parts=tuple(content), synthetic=steer)
    session.append(message)
    kernel.emit(session, MessageEvent(message=message))
    stop = next((v for v in verdicts if v.stop), None)
    if stop is not None:
        return Accepted(
            True, stop=True, reason=stop.stop_reason or stop.reason or "a hook ended the turn"
        )
    return Accepted(True)


async def deliver_steers(session: Session) -> None:
    """Append what the person typed while the turn ran, in order."""
    while not session.steers.empty():
        await accept_prompt(session, session.steers.get_nowait(), steer=True)
