"""The JSON a Claude Code hook gets, in Claude Code's field names (shared by the
commands of ``[hooks]`` and the Agent SDK's hook callbacks).

Common fields: ``session_id`` (the root session's: a subagent's hooks see their
parent's, plus ``agent_id`` and ``agent_type``), ``cwd``, ``hook_event_name``,
``permission_mode``. Tool events add ``tool_name``, ``tool_input``, ``tool_use_id``.
ketch's own fields are added beside them, never instead: ``event``, ``workspace``,
``ketch_session_id``, ``ketch_mode``, ``ketch_profile``. For the file tools,
``tool_input`` also has Claude Code's ``file_path`` (absolute) next to ketch's
``path``; an ``updatedInput`` that changed ``file_path`` changes ``path``. There is no
``transcript_path``: ketch keeps transcripts encrypted, never in a plain file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch_claude_kit.permission_modes import claude_mode
from ketch_claude_kit.tool_names import takes_file_path

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session


def permission_mode(session: Session) -> str:
    """Claude Code's name for the session's authority (plan mode, else by profile)."""
    return claude_mode(session.mode, session.profile, read_only=session.read_only)


def common(session: Session, event: str) -> dict[str, Any]:
    parent = session.parent
    data: dict[str, Any] = {
        "session_id": parent.id if parent is not None else session.id,
        "cwd": str(session.workspace),
        "hook_event_name": event,
        "permission_mode": permission_mode(session),
    }
    if parent is not None:
        data["agent_id"] = session.agent_id
        data["agent_type"] = session.agent_name
    data.update(
        {
            "event": event,
            "workspace": str(session.workspace),
            "ketch_session_id": session.id,
            "ketch_mode": session.mode,
            "ketch_profile": session.profile,
        }
    )
    return data


def tool_input(workspace: Path, tool: str, data: dict[str, Any]) -> dict[str, Any]:
    """The input as a Claude Code program sees it: ketch's, plus ``file_path``."""
    shown = dict(data)
    if takes_file_path(tool) and isinstance(data.get("path"), str) and "file_path" not in data:
        shown["file_path"] = str((Path(workspace) / data["path"]).resolve())
    return shown


def updated_input(
    workspace: Path, tool: str, original: dict[str, Any], updated: dict[str, Any]
) -> dict[str, Any]:
    """A changed input as ketch's: a changed ``file_path`` is the new ``path``; the
    alias itself goes (ketch's tools would refuse an unknown key)."""
    shown = tool_input(workspace, tool, original)
    if "file_path" not in updated or "file_path" in original:
        return dict(updated)
    result = {k: v for k, v in updated.items() if k != "file_path"}
    if updated["file_path"] != shown.get("file_path") or "path" not in result:
        result["path"] = updated["file_path"]
    return result
