"""From journal entries back to a session: transcript, active context, operations.

The transcript is every journaled message in order. Where a step's tool calls have no
results (the process died mid-step), a synthetic tool message is derived right after
the calls, so the history stays valid for every provider: a call that finished keeps
its recorded result, a call in flight is reported as having an unknown outcome, and a
call that never started says it did not run. The derivation is deterministic (same
message id every time) and nothing is rewritten in the journal.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

from ketch.api import Message, SessionRecord, ToolCallPart, ToolResultPart, Usage

NOT_RUN = "[ketch] This call was not run: ketch stopped before it started."
_MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


def unknown_outcome_text() -> str:
    from ketch.api import UNKNOWN_OUTCOME

    return UNKNOWN_OUTCOME


@dataclass
class Operation:
    """One tool call as the journal saw it."""

    tool_call_id: str
    name: str = ""
    input: dict[str, Any] = field(default_factory=dict)
    status: str = (
        "proposed"  # dispatched, succeeded, failed, blocked, cancelled, refused, unknown_outcome
    )
    dispatched_at: float | None = None
    finished_at: float | None = None
    ok: bool | None = None
    output: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool_call_id": self.tool_call_id,
            "name": self.name,
            "input": self.input,
            "status": self.status,
            "dispatched_at": self.dispatched_at,
            "finished_at": self.finished_at,
            "ok": self.ok,
            "output": self.output,
        }


@dataclass
class Loaded:
    record: SessionRecord
    title: str
    created: float
    updated: float
    operations: list[Operation]
    timeline: list[dict[str, Any]]  # every non-message entry: (seq, kind, ts, data)
    children: list[Any] = field(default_factory=list)  # subagents (ketch_store_kit.children.Child)


def build(
    header: dict[str, Any],
    entries: list[tuple[int, str, float, bytes]],
    statuses: dict[str, str],
    call_key: Callable[[str, str], str],
) -> Loaded:
    from ketch_store_kit.children import is_child

    session_id = header["id"]
    entries = [
        entry for entry in entries if not is_child(entry[1])
    ]  # subagents' entries: see children
    message_rows = [(seq, raw) for seq, kind, _, raw in entries if kind == "message"]
    messages = (
        _MESSAGES.validate_json(b"[" + b",".join(raw for _, raw in message_rows) + b"]")
        if message_rows
        else []
    )
    by_seq = {seq: message for (seq, _), message in zip(message_rows, messages, strict=True)}

    operations: list[Operation] = []
    current: dict[
        str, Operation
    ] = {}  # the latest operation of each call id (models may reuse ids)
    started_seq: dict[int, Operation] = {}
    timeline: list[dict[str, Any]] = []
    pins: tuple[str, ...] | None = None  # older journals kept these as entries of their own
    state: dict[str, Any] = {}
    compactions: list[dict[str, Any]] = []
    active_items: list[dict[str, Any]] | None = None
    active_seq = 0
    rewound: list[str] = []
    by_value: dict[str, Message] = {}  # summaries an active context held (a rewind refers to them)
    for seq, kind, ts, raw in entries:
        if kind == "message":
            continue
        data = json.loads(raw)
        timeline.append({"seq": seq, "kind": kind, "ts": ts, "data": data})
        if kind == "tool_started":
            op = _operation(operations, current, data["tool_call_id"], reuse=("proposed",))
            op.name, op.input, op.status, op.dispatched_at = (
                data.get("name", ""),
                data.get("input", {}),
                "dispatched",
                ts,
            )
            started_seq[seq] = op
        elif kind == "tool_result":
            op = _operation(
                operations, current, data["tool_call_id"], reuse=("proposed", "dispatched")
            )
            op.name = op.name or data.get("name", "")
            op.status, op.finished_at, op.ok, op.output = (
                data.get("outcome", "succeeded"),
                ts,
                data.get("ok"),
                data.get("output"),
            )
        elif kind == "recovery":
            started = started_seq.get(data.get("dispatched_seq") or -1)
            if started is not None and started.status == "dispatched":
                started.status = data.get("status", "unknown_outcome")
        elif kind == "pins":
            pins = tuple(data.get("pins", ()))
        elif kind == "state":
            state = dict(data.get("state", {}))
        elif kind == "compaction" and "record" in data:
            # Written by an older ketch: the record and the active context it produced
            # (a compaction now keeps its record in the state and says "active").
            compactions.append(
                data.get("record") or {k: v for k, v in data.items() if k != "active"}
            )
            if data.get("active") is not None:
                active_items, active_seq = data["active"], seq
                _remember(by_value, active_items)
        elif kind == "active":
            active_items, active_seq = data.get("items", []), seq
            _remember(by_value, active_items)
        elif kind == "rewind":
            # The conversation continues from before a turn: those messages stay in the
            # transcript, marked; the active context is the one the entry names.
            marked = set(rewound)
            rewound += [
                i for i in data.get("rewound", []) if isinstance(i, str) and i not in marked
            ]
            active_items = [{"ref": i} for i in data.get("active", []) if isinstance(i, str)]
            active_seq = seq
    # The operations table is the authority on the latest operation of each call id
    # (recovery updates it in place too); earlier ones are as the journal tells.
    for op in current.values():
        status = statuses.get(call_key(session_id, op.tool_call_id))
        if status:
            op.status = status

    transcript = _repair([(seq, by_seq[seq]) for seq, _ in message_rows], current)
    active = _active(transcript, active_items, active_seq, by_value)
    if active is None and rewound:  # never bring rewound turns back into the conversation
        active = tuple(m for _, m in transcript if m.id not in set(rewound))
    _fold_older_entries(state, pins, compactions, rewound)
    unknown = [op.as_dict() for op in operations if op.status == "unknown_outcome"]
    record = SessionRecord(
        id=session_id,
        name=header["name"],
        workspace=header["workspace"],
        provider=header["provider"],
        model=header["model"],
        mode=header["mode"],
        transcript=tuple(m for _, m in transcript),
        active=active,
        usage=Usage(**header["usage"]),
        unknown_outcomes=unknown,
        state=state,
    )
    return Loaded(
        record, header["title"], header["created"], header["updated"], operations, timeline
    )


def _fold_older_entries(
    state: dict[str, Any],
    pins: tuple[str, ...] | None,
    compactions: list[dict[str, Any]],
    rewound: list[str],
) -> None:
    """What journals kept as entries of their own, into the state where their owners
    keep it now (``ketch_context_kit``): a journal written by an older ketch reads the
    same, and the rewind entries a stored session's conversation rewind appends count."""
    from ketch_context_kit.compaction import STATE_KEY, set_pinned
    from ketch_context_kit.marks import mark_rewound

    found = state.get(STATE_KEY)
    kept: dict[str, Any] = found if isinstance(found, dict) else {}
    if pins is not None and "pins" not in kept:
        set_pinned(state, pins)
    if compactions and not kept.get("records"):
        state.setdefault(STATE_KEY, {})["records"] = compactions
    if rewound:
        mark_rewound(state, rewound)


def _operation(
    operations: list[Operation],
    current: dict[str, Operation],
    call_id: str,
    *,
    reuse: tuple[str, ...],
) -> Operation:
    """The operation an entry belongs to: the call id's latest one while it is still in
    one of the ``reuse`` states, else a new one (the id was used again)."""
    op = current.get(call_id)
    if op is None or op.status not in reuse:
        op = Operation(call_id)
        operations.append(op)
        current[call_id] = op
    return op


def _repair(
    messages: list[tuple[float, Message]], operations: dict[str, Operation]
) -> list[tuple[float, Message]]:
    """Insert a result message after every step whose calls were left without results."""
    out: list[tuple[float, Message]] = []
    pending: list[ToolCallPart] = []
    owner: tuple[float, Message] | None = None

    def close() -> None:
        nonlocal pending
        if pending and owner is not None:
            out.append((owner[0] + 0.5, _results_for(owner[1], pending, operations)))
        pending = []

    for seq, message in messages:
        if message.role == "tool":
            answered = {r.tool_call_id for r in message.tool_results}
            pending = [c for c in pending if c.id not in answered]
        else:
            close()
        out.append((seq, message))
        if message.role == "assistant":
            pending, owner = list(message.tool_calls), (seq, message)
    close()
    return out


def _results_for(
    assistant: Message, calls: list[ToolCallPart], operations: dict[str, Operation]
) -> Message:
    parts = []
    for call in calls:
        op = operations.get(call.id)
        if (
            op is not None
            and op.output is not None
            and op.status not in ("dispatched", "unknown_outcome")
        ):
            parts.append(
                ToolResultPart(
                    tool_call_id=call.id, name=call.name, ok=bool(op.ok), output=op.output
                )
            )
        elif op is not None and op.status in ("dispatched", "unknown_outcome"):
            parts.append(
                ToolResultPart(
                    tool_call_id=call.id, name=call.name, ok=False, output=unknown_outcome_text()
                )
            )
        else:
            parts.append(
                ToolResultPart(tool_call_id=call.id, name=call.name, ok=False, output=NOT_RUN)
            )
    return Message(
        id=f"msg_recovered_{assistant.id}", role="tool", parts=tuple(parts), synthetic=True
    )


def _remember(by_value: dict[str, Message], items: list[dict[str, Any]]) -> None:
    for item in items:
        if "message" in item:
            message = Message.model_validate(item["message"])
            by_value[message.id] = message


def _active(
    transcript: list[tuple[float, Message]],
    items: list[dict[str, Any]] | None,
    after: int,
    by_value: dict[str, Message],
) -> tuple[Message, ...] | None:
    if items is None:
        return None
    known = {**by_value, **{m.id: m for _, m in transcript}}
    resolved: list[Message] = []
    for item in items:
        if "ref" in item:
            message = known.get(item["ref"])
            if message is None:  # a referenced message is gone: fall back to the whole transcript
                return None
            resolved.append(message)
        else:
            resolved.append(Message.model_validate(item["message"]))
    return tuple(resolved) + tuple(m for seq, m in transcript if seq > after)
