"""What the sandbox did for each command, journaled as a ``sandbox`` event of its call.

One event per command a tool asked the sandbox to wrap (``ketch_sandbox_command`` with
the call's context): whether it runs inside the sandbox (and if not, why), whether it
has the network (through the egress proxy) and the ``[sandbox.network]`` rules in force,
and the view's shape (how many paths are read-only, masked, covered, hidden; no path
names, which could say what the workspace holds). Provenance receipts read these
(docs/provenance.md); a call that ran a program and has no such event ran outside any
sandbox (``dangerously_disable_sandbox``, or no sandbox plugin).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session, ToolContext


class SandboxEvent(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: Literal["sandbox"] = "sandbox"
    ts: float = Field(default_factory=time.time)
    agent_id: str | None = None
    tool_call_id: str = ""
    sandboxed: bool
    reason: str = ""  # why not, when not sandboxed
    network: Literal["none", "proxy"] = "none"
    view: dict[str, int] = Field(default_factory=dict)
    rules: dict[str, list[str]] = Field(default_factory=dict)  # [sandbox.network] in force


def view_shape(view: Any) -> dict[str, int]:
    """How many paths of each kind a view holds (``view.View``), no names."""
    return {
        "read_only": len(view.system) + len(view.read_only),
        "protected": len(view.protect),
        "masked": len(view.masks),
        "covered": len(view.cover),
        "hidden": len(view.hide),
    }


def network_rules(session: Session | None) -> dict[str, list[str]]:
    if session is None:
        return {}
    from ketch_sandbox.sessions import rules_for

    rules = rules_for(session)
    return {
        name: [str(p) for p in getattr(rules, name)]
        for name in ("allow", "deny", "read_only", "local")
    }


def record(
    context: ToolContext | None,
    session: Session | None,
    *,
    sandboxed: bool,
    reason: str = "",
    network: bool = False,
    view: Any = None,
) -> None:
    """Journal what the sandbox did for the running call's command (nothing outside a call)."""
    if context is None or not context.tool_call_id:
        return
    context.emit(
        SandboxEvent(
            tool_call_id=context.tool_call_id,
            sandboxed=sandboxed,
            reason=reason,
            network="proxy" if network else "none",
            view=view_shape(view) if view is not None else {},
            rules=network_rules(session),
        )
    )
