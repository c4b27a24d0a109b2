"""Subagents' sessions, kept under their parent's.

A subagent's events are journaled in its parent's journal with the kind
``agent/<agent id>/<event type>`` (sealed like every entry, chained with them), so a
parent's history is one journal, deleting it deletes its children, and listing or
``--continue`` never meet a child. The parent's own ``subagent`` entries say who each
child was (name, task, the call that started it, how it ended). Loading a parent
builds each child's transcript from its entries; resuming the parent brings back what
the children returned (their results are in its transcript), never the children.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PREFIX = "agent/"

Entry = tuple[int, str, float, bytes]


def child_kind(agent_id: str, kind: str) -> str:
    return f"{PREFIX}{agent_id}/{kind}"


def is_child(kind: str) -> bool:
    return kind.startswith(PREFIX)


@dataclass
class Child:
    agent_id: str
    info: dict[
        str, Any
    ]  # from the parent's "subagent" entries: name, description, tool_call_id, stop_reason...
    loaded: Any  # ketch_store_kit.record.Loaded of the child's own entries


def children(
    header: dict[str, Any],
    entries: list[Entry],
    statuses: dict[str, str],
    call_key: Callable[[str, str], str],
) -> list[Child]:
    """Every subagent of the session whose entries these are, in the order they started."""
    from ketch_store_kit.record import build

    own: dict[str, list[Entry]] = {}
    recovery: list[Entry] = []
    info: dict[str, dict[str, Any]] = {}
    for seq, kind, ts, raw in entries:
        if is_child(kind):
            agent_id, _, rest = kind[len(PREFIX) :].partition("/")
            own.setdefault(agent_id, []).append((seq, rest, ts, raw))
        elif kind == "recovery":
            recovery.append((seq, kind, ts, raw))
        elif kind == "subagent":
            data = json.loads(raw)
            info.setdefault(str(data.get("subagent_id", "")), {}).update(
                {k: v for k, v in data.items() if v not in (None, "", [])}
            )
    found: list[Child] = []
    root = header["id"]
    for agent_id, mine in own.items():
        meta = info.get(agent_id, {})
        session: dict[str, Any] = next(
            (json.loads(raw) for _, kind, _, raw in mine if kind == "session"), {}
        )
        child_header = {
            **header,
            "id": meta.get("session_id") or agent_id,
            "name": meta.get("name", ""),
            "title": meta.get("description", ""),
            "provider": session.get("provider", header["provider"]),
            "model": session.get("model", header["model"]),
            "created": mine[0][2],
            "updated": mine[-1][2],
            "usage": {
                "input_tokens": 0,
                "output_tokens": 0,
                "cached_tokens": 0,
                "reasoning_tokens": 0,
            },
        }
        merged = sorted(mine + recovery)  # a crash's recovery marks reach the child's calls too
        loaded = build(
            child_header, merged, statuses, lambda _sid, call_id: call_key(root, call_id)
        )
        found.append(Child(agent_id, meta, loaded))
    return found
