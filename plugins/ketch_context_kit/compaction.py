"""What a compaction is: a request with a budget, a result with a record, its event, and
where a session keeps its records and pinned turns.

The compact plugin runs compactions (when, and with which compactor: its own hooks,
``ketch_compact.hookspecs``); everyone who reads what compaction did — ``/context``,
rewinding, the store's transcript view — reads it here, from ``session.state`` (saved
with the session, encrypted): ``records`` in order, each ``{"n", "reason", "compactor",
"before_tokens", "after_tokens", "record": [{"replaced": [ids], "by": id, "how": ...}]}``,
and the ids of pinned prompts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ketch.api import Event, History

STATE_KEY = "compaction"


class CompactionRequest(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    session: Any  # ketch.session.Session
    messages: History  # the active context now
    system_tokens: int = 0  # system prompt + tool schemas, which compaction cannot shrink
    target_tokens: int  # bring messages + system_tokens to at most this
    capacity_tokens: int  # effective capacity
    reason: Literal["auto", "overflow", "command"] = "auto"  # command: /compact
    instructions: str | None = None  # from /compact [instructions]
    pinned: frozenset[str] = frozenset()  # message ids that must stay verbatim


class CompactionResult(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    messages: History  # the new active context
    before_tokens: int
    after_tokens: int
    compactor: str = ""
    summary: str = ""
    # What was replaced by what: e.g. [{"replaced": [msg ids], "by": msg id, "how": "summary"}]
    record: list[dict[str, Any]] = Field(default_factory=list)


class CompactionEvent(Event):
    """A compaction replaced part of the active context (the design's ``compaction``)."""

    type: Literal["compaction"] = "compaction"
    before_tokens: int
    after_tokens: int
    compactor: str = ""
    summary: str = ""


def _table(state: dict[str, Any]) -> dict[str, Any]:
    table = state.get(STATE_KEY)
    if not isinstance(table, dict):
        table = state[STATE_KEY] = {}
    return table


def records(state: dict[str, Any]) -> list[dict[str, Any]]:
    """Every compaction's record, oldest first (a copy)."""
    found = state.get(STATE_KEY)
    kept = found.get("records") if isinstance(found, dict) else None
    return [r for r in kept if isinstance(r, dict)] if isinstance(kept, list) else []


def add_record(state: dict[str, Any], record: dict[str, Any]) -> None:
    table = _table(state)
    if not isinstance(table.get("records"), list):
        table["records"] = []
    table["records"].append(record)


def pinned(state: dict[str, Any]) -> set[str]:
    """The ids of the pinned prompts (a copy)."""
    found = state.get(STATE_KEY)
    pins = found.get("pins") if isinstance(found, dict) else None
    return {str(p) for p in pins} if isinstance(pins, list) else set()


def set_pinned(state: dict[str, Any], ids: Iterable[str]) -> None:
    _table(state)["pins"] = sorted(set(ids))


def origins(compactions: Iterable[dict[str, Any]]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """For each message a compaction created: (how, the transcript ids it stands for).

    Follows chains (a summary that replaced an earlier summary stands for what that one
    replaced). Records that do not follow the ``{"replaced": [ids], "by": id, "how":
    ...}`` shape are skipped.
    """
    found: dict[str, tuple[str, tuple[str, ...]]] = {}
    for compaction in compactions:
        items = compaction.get("record") if isinstance(compaction, dict) else None
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict):
                continue
            by, replaced = item.get("by"), item.get("replaced")
            if not isinstance(by, str) or not isinstance(replaced, list):
                continue
            expanded: list[str] = []
            for old in replaced:
                if isinstance(old, str):
                    expanded.extend(found[old][1] if old in found else (old,))
            found[by] = (str(item.get("how") or "replaced"), tuple(dict.fromkeys(expanded)))
    return found
