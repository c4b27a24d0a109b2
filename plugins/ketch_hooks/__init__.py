"""User hooks: shell commands the user configures to run at lifecycle events.

    [[hooks.PreToolUse]]
    matcher = "shell|write_file"     # tool names: a regular expression, or "*"
    command = "./scripts/check.sh"
    timeout = 30

The event goes to the command as JSON on stdin. Exit 0: carry on (for UserPromptSubmit,
stdout is added as context for the model). Exit 2: block — PreToolUse refuses the call
and stderr goes to the model; PostToolUse feeds stderr to the model; UserPromptSubmit
drops the prompt and shows stderr to the user; Stop keeps the turn going with stderr as
the next instruction. Any other exit: a warning, nothing blocked.

Events: SessionStart, SessionEnd, UserPromptSubmit, PreToolUse, PostToolUse, PreCompact,
PostCompact, Stop. A workspace's ``.ketch/config.toml`` cannot add hooks until the
workspace is trusted (the settings loader drops them with a notice).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.compaction import CompactionResult
    from ketch.events import TurnEndEvent
    from ketch.policy import ProposedCall
    from ketch.session import Session
    from ketch.tools import ToolResult
    from ketch.verdicts import HookVerdict


def _run(session: Session, event: str, payload: dict[str, Any], matcher_subject: str | None = None) -> list[Any]:
    from ketch_hooks.runner import run_hooks

    return run_hooks(session, event, payload, matcher_subject)


@hookimpl
def ketch_register_settings(register: Any) -> None:
    from ketch_hooks.settings import HOOKS

    register(HOOKS)


@hookimpl
def ketch_session_start(session: Session) -> None:
    _run(session, "SessionStart", {"resumed": session.resumed})


@hookimpl
def ketch_session_end(session: Session, reason: str) -> None:
    _run(session, "SessionEnd", {"reason": reason})


@hookimpl
def ketch_user_prompt_submit(session: Session, prompt: str) -> HookVerdict | None:
    from ketch_hooks.runner import verdict

    return verdict(_run(session, "UserPromptSubmit", {"prompt": prompt}), context_from_stdout=True)


@hookimpl
def ketch_before_tool_use(session: Session, call: ProposedCall) -> HookVerdict | None:
    from ketch_hooks.runner import verdict

    payload = {"tool_name": call.tool, "tool_input": call.input, "tool_call_id": call.id}
    return verdict(_run(session, "PreToolUse", payload, call.tool))


@hookimpl
def ketch_after_tool_use(session: Session, call: ProposedCall, result: ToolResult) -> str | None:
    payload = {"tool_name": call.tool, "tool_input": call.input, "tool_call_id": call.id, "ok": result.ok, "output": result.output}
    notes = [r.stderr.strip() for r in _run(session, "PostToolUse", payload, call.tool) if r.code == 2 and r.stderr.strip()]
    return "\n".join(notes) or None


@hookimpl
def ketch_before_compaction(session: Session, reason: str) -> None:
    _run(session, "PreCompact", {"reason": reason})


@hookimpl
def ketch_after_compaction(session: Session, result: CompactionResult) -> None:
    _run(session, "PostCompact", {"before_tokens": result.before_tokens, "after_tokens": result.after_tokens})


@hookimpl
def ketch_stop(session: Session, event: TurnEndEvent) -> HookVerdict | None:
    from ketch_hooks.runner import verdict

    return verdict(_run(session, "Stop", {"stop_reason": event.stop_reason, "text": event.text}))
