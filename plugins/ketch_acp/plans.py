"""The model's plan, for the editor's plan view.

ketch has no plan tool of its own; a plugin may offer one. A call to a tool named
``update_plan`` (Codex's shape: ``{"plan": [{"step", "status"}]}``) or ``todo_write``
(Claude Code's TodoWrite shape: ``{"todos": [{"content", "status", "priority"?}]}``)
becomes an ACP ``plan`` update: always the full list, which replaces the last one.
"""

from __future__ import annotations

from typing import Any

from acp.schema import AgentPlanUpdate, PlanEntry

PLAN_TOOLS = ("update_plan", "todo_write")
_STATUS = {
    "pending": "pending",
    "in_progress": "in_progress",
    "completed": "completed",
    "done": "completed",
    "in-progress": "in_progress",
}
_PRIORITY = {"high", "medium", "low"}


def plan_update(name: str, tool_input: dict[str, Any]) -> AgentPlanUpdate | None:
    if name not in PLAN_TOOLS or not isinstance(tool_input, dict):
        return None
    items = tool_input.get("plan") if name == "update_plan" else tool_input.get("todos")
    if not isinstance(items, list):
        return None
    entries: list[PlanEntry] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        text = item.get("step") or item.get("content")
        if not isinstance(text, str) or not text.strip():
            continue
        status = _STATUS.get(str(item.get("status", "pending")).lower(), "pending")
        priority = str(item.get("priority", "medium")).lower()
        entries.append(
            PlanEntry(
                content=text.strip(),
                status=status,
                priority=priority if priority in _PRIORITY else "medium",
            )
        )  # type: ignore[arg-type]
    return AgentPlanUpdate(session_update="plan", entries=entries)
