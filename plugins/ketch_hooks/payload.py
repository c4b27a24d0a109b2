"""The JSON a hook command gets on stdin, in Claude Code's field names (the fields
themselves: :mod:`ketch_claude_kit.hook_payload`).

``tool_name`` is ketch's name (``shell``) unless the hook has ``claude_names`` (then
``Bash``, with ``ketch_tool_name`` beside it); ``tool_call_id`` repeats
``tool_use_id`` under ketch's name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch_claude_kit import hook_payload
from ketch_claude_kit.tool_names import claude_name

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ProposedCall, Session
    from ketch_hooks.settings import HookCommand

common = hook_payload.common
permission_mode = hook_payload.permission_mode


def tool_input(session: Session, tool: str, data: dict[str, Any]) -> dict[str, Any]:
    return hook_payload.tool_input(session.workspace, tool, data)


def updated_input(
    session: Session, tool: str, original: dict[str, Any], updated: dict[str, Any]
) -> dict[str, Any]:
    return hook_payload.updated_input(session.workspace, tool, original, updated)


def tool_call(
    session: Session, event: str, call: ProposedCall, hook: HookCommand
) -> dict[str, Any]:
    data = common(session, event)
    name = call.tool
    data["tool_name"] = (claude_name(name) or name) if hook.claude_names else name
    if hook.claude_names:
        data["ketch_tool_name"] = name
    data["tool_input"] = tool_input(session, name, call.input)
    data["tool_use_id"] = data["tool_call_id"] = call.id
    return data
