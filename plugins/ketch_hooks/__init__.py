"""User hooks: commands the user configures to run at lifecycle events, compatible
with Claude Code's hooks (docs/hooks.md)::

    [[hooks.PreToolUse]]
    matcher = "Bash|write_file"      # ketch's or Claude Code's tool names, or a regex
    command = "./scripts/check.sh"   # gets the event as JSON on stdin
    timeout = 30                     # seconds (default 60)

Events: SessionStart, SessionEnd, UserPromptSubmit, PreToolUse, PostToolUse,
PostToolUseFailure, Notification, Stop, SubagentStart, SubagentStop, PreCompact,
PostCompact. The JSON on stdin and the JSON a hook prints follow Claude Code's
contract (``payload``, ``output``, ``handlers``); exit 2 blocks with stderr as the
reason. Hooks run as asynchronous subprocesses, side by side, with a timeout and
capped output. A hook of a workspace's ``.ketch/config.toml`` runs only while the
person has it trusted (``ketch trust`` pins it; a changed hook, or a changed script it
runs, is held back again). ``ketch hooks import`` brings a ``.claude/settings.json``'s
hooks over. Other plugins add hooks through the ``hooks_extra`` hook this plugin
declares (an installed Claude Code plugin's ``hooks/hooks.json``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import Command, StashKey, hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Event, HookVerdict, ProposedCall, Session, ToolResult, TurnEndEvent
    from ketch_context_kit.compaction import CompactionResult

# What SessionStart hooks said for the model (or the task still running them).
START_CONTEXT = StashKey[Any]()
# When each running call started (for duration_ms after it).
STARTED = StashKey[dict[str, float]]()


def _has(session: Session, event: str) -> bool:
    from ketch_hooks.runner import configured

    return bool(configured(session, event))


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_hooks import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def ketch_register_settings(register: Callable[[Any], None]) -> None:
    from ketch_hooks.settings import HOOKS

    register(HOOKS)


@hookimpl(optionalhook=True)
def trust_setting_items(kernel: Any, key: tuple[str, ...], value: Any) -> list[Any] | None:
    if key != ("hooks",):
        return None
    from ketch_hooks.trust import setting_items

    return setting_items(kernel, value)


@hookimpl(optionalhook=True)
def trust_items(kernel: Any) -> list[Any]:
    from ketch_hooks.trust import claude_items

    return claude_items(kernel)


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    from ketch_hooks.commands import configure, run

    register(
        Command(
            name="hooks",
            help="import Claude Code hooks from .claude/settings.json into ketch's config",
            cli=True,
            configure=configure,
            run=run,
        )
    )


@hookimpl
def ketch_session_start(session: Session) -> None:
    if session.parent is not None or not _has(session, "SessionStart"):
        return  # a subagent's start is SubagentStart
    import asyncio

    from ketch_hooks.background import complete
    from ketch_hooks.handlers import session_start

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        session.stash[START_CONTEXT] = asyncio.run(
            complete(session, lambda: session_start(session))
        )
        return
    session.stash[START_CONTEXT] = asyncio.ensure_future(session_start(session))


@hookimpl
def ketch_session_end(session: Session, reason: str) -> None:
    if session.parent is not None or not _has(session, "SessionEnd"):
        return
    import asyncio

    from ketch_hooks.background import fire
    from ketch_hooks.handlers import session_end

    try:
        asyncio.get_running_loop()
        quiet = True  # it runs in a thread of its own: no events from there
    except RuntimeError:
        quiet = False
    fire(session, lambda: session_end(session, reason, quiet=quiet), outlive_loop=True)


@hookimpl(optionalhook=True)
def verbatim_prompts(session: Session) -> str | None:
    """Every prompt, where no SessionStart or UserPromptSubmit hook is configured (one
    that is may stop a prompt or add to it: then none is sent early)."""
    if _has(session, "SessionStart") or _has(session, "UserPromptSubmit"):
        return None
    return "(?s).*"


@hookimpl
async def ketch_user_prompt_submit(session: Session, prompt: str) -> HookVerdict | None:
    if session.parent is not None:
        return None  # a subagent's task is not something the person typed
    import asyncio

    from ketch.api import HookVerdict

    pending = session.stash.pop(START_CONTEXT, None)
    start = (await pending) if isinstance(pending, asyncio.Future) else pending
    verdict = None
    if _has(session, "UserPromptSubmit"):  # the handlers load only where a hook is set
        from ketch_hooks.handlers import user_prompt_submit

        verdict = await user_prompt_submit(session, prompt)
    if not start:
        return verdict
    if verdict is None:
        return HookVerdict(context="\n" + start)
    if verdict.block:
        session.stash[START_CONTEXT] = start  # kept for the prompt that gets through
        return verdict
    return HookVerdict(
        context="\n" + "\n".join(c.strip() for c in (start, verdict.context) if c),
        stop=verdict.stop,
        stop_reason=verdict.stop_reason,
    )


@hookimpl
async def ketch_before_tool_use(session: Session, call: ProposedCall) -> HookVerdict | None:
    if not _has(session, "PreToolUse"):
        return None
    from ketch_hooks.handlers import pre_tool_use

    return await pre_tool_use(session, call)


@hookimpl
def ketch_event(session: Session, event: Event) -> None:
    if event.type == "tool_started":
        import time

        session.stash.setdefault(STARTED, {})[event.tool_call_id] = time.monotonic()  # type: ignore[attr-defined]


@hookimpl
async def ketch_after_tool_use(
    session: Session, call: ProposedCall, result: ToolResult
) -> HookVerdict | None:
    started = session.stash.get(STARTED, {}).pop(call.id, None)
    if not _has(session, "PostToolUse" if result.ok else "PostToolUseFailure"):
        return None
    import time

    from ketch_hooks.handlers import post_tool_use

    duration = int((time.monotonic() - started) * 1000) if started is not None else None
    return await post_tool_use(session, call, result, duration)


@hookimpl
def ketch_notification(session: Session, message: str, kind: str) -> None:
    if not _has(session, "Notification"):
        return
    from ketch_hooks.background import detach
    from ketch_hooks.handlers import notification

    detach(session, notification(session, message, kind))  # the person is not kept waiting


@hookimpl(optionalhook=True)  # the compact plugin's hook
def compact_before(session: Session, reason: str) -> None:
    if not _has(session, "PreCompact"):
        return
    from ketch_hooks.background import fire
    from ketch_hooks.handlers import pre_compact

    fire(session, lambda: pre_compact(session, reason))


@hookimpl(optionalhook=True)  # the compact plugin's hook
def compact_after(session: Session, result: CompactionResult) -> None:
    if not _has(session, "PostCompact"):
        return
    from ketch_hooks.background import fire
    from ketch_hooks.handlers import post_compact

    fire(session, lambda: post_compact(session, result))


@hookimpl
async def ketch_stop(
    session: Session, event: TurnEndEvent, stop_hook_active: bool
) -> HookVerdict | None:
    from ketch_hooks.background import settle

    await settle(session)  # hooks started meanwhile finish before the turn ends
    if session.parent is not None or not _has(session, "Stop"):
        return None  # a subagent's stop is SubagentStop
    from ketch_hooks.handlers import stop

    return await stop(session, event, stop_hook_active)


@hookimpl(optionalhook=True)  # the agents plugin's hook
async def agents_subagent_start(session: Session, agent: Any) -> HookVerdict | None:
    if not _has(session, "SubagentStart"):
        return None
    from ketch_hooks.handlers import subagent_start

    return await subagent_start(session, agent)


@hookimpl(optionalhook=True)  # the agents plugin's hook
async def agents_subagent_stop(session: Session, agent: Any, result: str) -> HookVerdict | None:
    if not _has(session, "SubagentStop"):
        return None
    from ketch_hooks.handlers import subagent_stop

    return await subagent_stop(session, agent, result)
