"""The agents plugin's event (registered with ``ketch_register_events``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ketch.api import Event


class SubagentEvent(Event):
    """A subagent started or finished, on its parent's stream. ``subagent_id`` is what
    every event of the subagent's own session carries as ``agent_id``; ``tool_call_id``
    is the parent's call that started it. When ``finished``: how its turn ended, its
    final answer and the files it changed."""

    type: Literal["subagent"] = "subagent"
    status: Literal["started", "finished"]
    subagent_id: str
    name: str
    description: str = ""
    tool_call_id: str = ""
    background: bool = False
    session_id: str = ""  # the subagent's own session
    stop_reason: str | None = None
    result: str = ""
    files_changed: list[str] = Field(default_factory=list)
