"""Headless frontend: ``ketch -p PROMPT`` (or a prompt piped on stdin) runs one turn.

``--output-format text`` prints the answer on stdout and progress on stderr; ``json``
prints one object at the end; ``stream-json`` prints every event as one JSON line and
a ``result`` line per turn. ``--input-format stream-json`` reads Claude Code's
user-message lines from stdin, a turn each, in one session.
``--permission-prompt-command CMD`` lets a program answer approvals.
``--stream-schema claude`` (the ``ketch-claude`` command) speaks Claude Code's
stream-json messages and control protocol instead, so the Agent SDK and ``claude -p``
scripts drive ketch unchanged (docs/claude-code.md).
Exit codes: 0 the turn ended normally, 1 it failed (error, overflow, iteration limit,
cancel), 2 usage. See docs/headless.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import Frontend, hookimpl, provides

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import HookVerdict, PromptPart, ProposedCall, Session, ToolResult, TurnEndEvent
    from ketch_context_kit.compaction import CompactionResult


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_headless import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
@provides("headless")
def ketch_register_frontends(register: Callable[[Frontend], None]) -> None:
    from ketch_headless.run import run_headless

    register(
        Frontend(name="headless", run=run_headless, help="one turn, no interaction", role="prompt")
    )


@hookimpl
def ketch_add_cli_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input-format",
        choices=["text", "stream-json"],
        default="text",
        help="headless input: text (default), or stream-json (user-message JSON lines on stdin, a turn each)",
    )
    parser.add_argument(
        "--permission-prompt-command",
        metavar="CMD",
        help="headless: run CMD for every approval; the request as JSON on stdin, the decision as JSON on stdout",
    )
    parser.add_argument(
        "--permission-prompt-timeout",
        type=float,
        metavar="SECONDS",
        help="how long --permission-prompt-command may take before the call is denied (default 60)",
    )
    from ketch_headless.claude_options import add_options

    add_options(parser)


@hookimpl
def ketch_permission_rules(session: Session) -> dict[str, list[str]] | None:
    """Rules the Agent SDK program sent in ``initialize`` (deny rules, a settings
    object): part of every step's snapshot, like the command line's."""
    from ketch_headless.control import CHANNEL

    channel = session.kernel.stash.get(CHANNEL)
    return channel.rules if channel is not None and channel.rules else None


@hookimpl
def ketch_system_prompt(session: Session) -> list[PromptPart] | None:
    """``--system-prompt`` / ``--append-system-prompt`` (and their ``-file`` forms, or
    the same sent in ``initialize``): the person's instructions, added to ketch's own
    (which say how its tools work)."""
    args = session.kernel.args
    if session.parent is not None or args is None:
        return None
    from ketch_headless.control import CHANNEL

    channel = session.kernel.stash.get(CHANNEL)
    if channel is not None and (channel.system_prompt or channel.append_system_prompt):
        from ketch.api import PromptPart

        parts = [PromptPart(text=channel.system_prompt, order=1, source="systemPrompt")]
        parts.append(
            PromptPart(text=channel.append_system_prompt, order=990, source="appendSystemPrompt")
        )
        return [p for p in parts if p.text.strip()]
    if not any(
        getattr(args, name, None)
        for name in (
            "system_prompt",
            "system_prompt_file",
            "append_system_prompt",
            "append_system_prompt_file",
        )
    ):
        return None
    from ketch.api import PromptPart
    from ketch_headless.claude_options import read_text_option

    parts = []
    first = read_text_option(args.system_prompt, args.system_prompt_file, "--system-prompt")
    if first:
        parts.append(PromptPart(text=first, order=1, source="--system-prompt"))
    last = read_text_option(
        args.append_system_prompt, args.append_system_prompt_file, "--append-system-prompt"
    )
    if last:
        parts.append(PromptPart(text=last, order=990, source="--append-system-prompt"))
    return parts or None


# --- the Agent SDK program's hook callbacks (sdk_hooks): nothing unless it registered some ---


def _sdk(session: Session) -> bool:
    from ketch_headless.control import CHANNEL

    return CHANNEL in session.kernel.stash


@hookimpl
async def ketch_before_tool_use(
    session: Session, call: ProposedCall, decision: str
) -> HookVerdict | None:
    from ketch_headless.run import store_gate

    store_gate(session.kernel)  # a store that cannot keep this run stops it here
    if not _sdk(session):
        return None
    from ketch_headless.sdk_hooks import pre_tool_use

    return await pre_tool_use(session, call)


@hookimpl
async def ketch_after_tool_use(
    session: Session, call: ProposedCall, result: ToolResult
) -> HookVerdict | None:
    if not _sdk(session):
        return None
    from ketch_headless.sdk_hooks import after_tool_use

    return await after_tool_use(session, call, result)


@hookimpl(optionalhook=True)
def verbatim_prompts(session: Session) -> str | None:
    """Every prompt but a slash command (``/name args`` runs the command: its text is
    sent, not the prompt), unless an SDK client answers hooks over the control channel."""
    return None if _sdk(session) else "(?s)(?!/).*"


@hookimpl
async def ketch_user_prompt_submit(session: Session, prompt: str) -> HookVerdict | None:
    if not _sdk(session):
        return None
    from ketch_headless.sdk_hooks import prompt_submit

    return await prompt_submit(session, prompt)


@hookimpl
async def ketch_stop(
    session: Session, event: TurnEndEvent, stop_hook_active: bool
) -> HookVerdict | None:
    if not _sdk(session):
        return None
    from ketch_headless.sdk_hooks import stop

    return await stop(session, event.text, stop_hook_active)


@hookimpl(optionalhook=True)  # the agents plugin's hook
async def agents_subagent_start(session: Session, agent: Any) -> HookVerdict | None:
    if not _sdk(session):
        return None
    from ketch_headless.sdk_hooks import subagent_start

    return await subagent_start(session, agent)


@hookimpl(optionalhook=True)  # the agents plugin's hook
async def agents_subagent_stop(session: Session, agent: Any, result: str) -> HookVerdict | None:
    if not _sdk(session):
        return None
    from ketch_headless.sdk_hooks import subagent_stop

    return await subagent_stop(session, agent, result)


@hookimpl
async def ketch_notification(session: Session, message: str, kind: str) -> None:
    if _sdk(session):
        from ketch_headless.sdk_hooks import notification

        await notification(session, message, kind)


@hookimpl(optionalhook=True)  # the compact plugin's hook
def compact_before(session: Session, reason: str) -> None:
    if _sdk(session):
        from ketch_headless.sdk_hooks import compaction

        trigger = "manual" if reason == "command" else "auto"
        compaction(session, "PreCompact", {"trigger": trigger, "custom_instructions": ""})


@hookimpl(optionalhook=True)  # the compact plugin's hook
def compact_after(session: Session, result: CompactionResult) -> None:
    if _sdk(session):
        from ketch_headless.sdk_hooks import compaction

        compaction(session, "PostCompact", {"trigger": "auto", "compact_summary": result.summary})
