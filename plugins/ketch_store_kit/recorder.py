"""Turns session events into journal entries (the store's ``ketch_event`` observer).

Events arrive synchronously and in order; when :meth:`Recorder.observe` returns, the
entry is committed. That is what makes "journal the dispatch before the effect" hold:
the loop runs a tool right after ``tool_started`` has been observed.

What is journaled: messages (the complete transcript), tool dispatches and outcomes,
permission decisions, usage (the token ledger), the active context whenever a plugin
replaces it (an ``active`` event), mode changes, errors, turn ends, and every event a
plugin defines (as it is: it is history). Per-plugin state, the active context and
the model are compared at each turn end and session end, and journaled when they
changed. Streaming deltas, notices and the duplicate ``tool_call``/``user_prompt``
events are not stored: the messages carry them.

A subagent's session is kept under its parent's (``children``): its entries go into
the parent's journal, tagged with its agent id, and change nothing of the parent's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ketch_store_kit.codec import dumps

if TYPE_CHECKING:  # pragma: no cover
    import sqlite3

    from ketch.api import Event, Session
    from ketch_store_kit.journal import SqlJournal

IGNORED = frozenset(
    {"text_delta", "reasoning_delta", "tool_call", "tool_output", "user_prompt", "notice"}
)


@dataclass
class Tracker:
    """What has been journaled for one live session, to tell what changed."""

    known_ids: set[str] = field(default_factory=set)
    active_ids: list[str] = field(default_factory=list)
    state: bytes = b"{}"
    model: str = ""
    provider: str = ""
    titled: bool = False


class Recorder:
    def __init__(self, store: SqlJournal) -> None:
        self.store = store
        self.trackers: dict[str, Tracker] = {}

    # --- entry points ----------------------------------------------------------------------

    def observe(self, session: Session, event: Event) -> None:
        kind = event.type
        if kind in IGNORED:
            return
        if session.parent is not None:
            self._observe_child(session, event)
            return
        tracker = self._tracker(session)
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(session, tracker, event)
        else:  # an event type added later: keep it, it is history
            self._append(
                session, kind, event.model_dump(mode="json", exclude={"type", "ts"}), event
            )

    def flush(self, session: Session) -> None:
        """Journal state, model and a changed active context (turn and session end)."""
        tracker = self._tracker(session)
        state = _state_json(session.state)
        if state != tracker.state:
            self._append_plain(session, "state", b'{"state":' + state + b"}")
            tracker.state = state
        if session.model != tracker.model or session.provider.name != tracker.provider:
            tracker.model, tracker.provider = session.model, session.provider.name
            self.store.update_session(
                session.id, model=session.model, provider=session.provider.name
            )
        if [m.id for m in session.active] != tracker.active_ids:
            self._append_plain(session, "active", {"items": self._active_items(session, tracker)})
            tracker.active_ids = [m.id for m in session.active]

    def end(self, session: Session) -> None:
        if session.parent is not None:
            return  # a child session's entries live in its parent's journal: nothing to close
        try:
            if self.store.has_session(session.id) and not self.store.message_count(session.id):
                self.store.delete_session(session.id)  # nothing was said: nothing to keep
            else:
                self.flush(session)
        finally:
            self.trackers.pop(session.id, None)
            self.store.release(session.id)  # the next writer of this session may go on

    # --- per event -------------------------------------------------------------------------------

    def _on_session(self, session: Session, tracker: Tracker, event: Any) -> None:
        self.store.update_session(
            session.id,
            model=event.model,
            provider=event.provider or session.provider.name,
            mode=event.mode,
        )
        tracker.model, tracker.provider = event.model, event.provider or session.provider.name
        self._append(
            session,
            "session",
            {
                "model": event.model,
                "provider": event.provider,
                "mode": event.mode,
                "profile": event.profile,
                "resumed": event.resumed,
            },
            event,
        )

    def _on_message(self, session: Session, tracker: Tracker, event: Any) -> None:
        message = event.message
        self._append(
            session, "message", message.model_dump_json().encode("utf-8"), event, messages=1
        )
        tracker.known_ids.add(message.id)
        tracker.active_ids.append(message.id)
        if (
            not tracker.titled
            and message.role == "user"
            and not message.synthetic
            and message.text.strip()
        ):
            tracker.titled = True
            first = next(
                p.text for p in message.parts if getattr(p, "type", "") == "text" and p.text.strip()
            )  # type: ignore[union-attr]
            self.store.set_title(session.id, first)  # the prompt itself, not context hooks added

    def _on_tool_started(self, session: Session, tracker: Tracker, event: Any) -> None:
        payload = {"tool_call_id": event.tool_call_id, "name": event.name, "input": event.input}
        self._append(
            session,
            "tool_started",
            payload,
            event,
            durable=True,
            extra=self._dispatched(session.id, event),
        )

    def _dispatched(self, session_id: str, event: Any) -> Any:
        store = self.store
        key = store.call_key(session_id, event.tool_call_id)
        owner = store.owner_id()

        def dispatched(conn: sqlite3.Connection, seq: int) -> None:
            conn.execute(
                "INSERT INTO operations (session_id, call_key, status, owner, dispatched_seq, updated) VALUES (?, ?, 'dispatched', ?, ?, ?) "
                "ON CONFLICT (session_id, call_key) DO UPDATE SET status = 'dispatched', owner = excluded.owner, "
                "dispatched_seq = excluded.dispatched_seq, finished_seq = NULL, updated = excluded.updated",
                (session_id, key, owner, seq, event.ts),
            )

        return dispatched

    def _on_tool_result(self, session: Session, tracker: Tracker, event: Any) -> None:
        payload = event.model_dump(mode="json", exclude={"type", "ts"})
        self._append(
            session,
            "tool_result",
            payload,
            event,
            durable=True,
            extra=self._finished(session.id, event),
        )

    def _finished(self, session_id: str, event: Any) -> Any:
        key = self.store.call_key(session_id, event.tool_call_id)

        def finished(conn: sqlite3.Connection, seq: int) -> None:
            conn.execute(
                "INSERT INTO operations (session_id, call_key, status, finished_seq, updated) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (session_id, call_key) DO UPDATE SET status = excluded.status, "
                "finished_seq = excluded.finished_seq, updated = excluded.updated",
                (session_id, key, event.outcome, seq, event.ts),
            )

        return finished

    def _observe_child(self, session: Session, event: Any) -> None:
        """A child session's event, journaled in its parent's journal under its agent id
        (dispatches and outcomes as durably, and in the same operations table)."""
        from ketch_store_kit.children import child_kind

        parent = session.parent
        assert parent is not None
        root, kind, agent_id = parent.id, event.type, session.agent_id or session.id
        if kind == "message":
            data: Any = event.message.model_dump_json().encode("utf-8")
        else:
            data = event.model_dump(mode="json", exclude={"type", "ts"})
        extra = (
            self._dispatched(root, event)
            if kind == "tool_started"
            else self._finished(root, event)
            if kind == "tool_result"
            else None
        )
        self._journal(
            root, child_kind(agent_id, kind), data, event, durable=extra is not None, extra=extra
        )

    def _on_usage(self, session: Session, tracker: Tracker, event: Any) -> None:
        usage = session.usage
        totals = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cached_tokens": usage.cached_tokens,
            "reasoning_tokens": usage.reasoning_tokens,
        }

        def ledger(conn: sqlite3.Connection, seq: int) -> None:
            conn.execute(
                "UPDATE sessions SET input_tokens = ?, output_tokens = ?, cached_tokens = ?, reasoning_tokens = ? WHERE id = ?",
                (*totals.values(), session.id),
            )

        self._append(
            session,
            "usage",
            event.model_dump(mode="json", exclude={"type", "ts"}),
            event,
            extra=ledger,
        )

    def _on_active(self, session: Session, tracker: Tracker, event: Any) -> None:
        # A plugin replaced the active context (a compaction, a rewind): kept at once.
        self._append(session, "active", {"items": self._active_items(session, tracker)}, event)
        tracker.active_ids = [m.id for m in session.active]

    def _on_mode(self, session: Session, tracker: Tracker, event: Any) -> None:
        self.store.update_session(session.id, mode=event.mode)
        self._append(session, "mode", {"mode": event.mode, "profile": event.profile}, event)

    def _on_permission(self, session: Session, tracker: Tracker, event: Any) -> None:
        self._append(
            session, "permission", event.model_dump(mode="json", exclude={"type", "ts"}), event
        )

    def _on_error(self, session: Session, tracker: Tracker, event: Any) -> None:
        self._append(session, "error", event.model_dump(mode="json", exclude={"type", "ts"}), event)

    def _on_turn_end(self, session: Session, tracker: Tracker, event: Any) -> None:
        self._append(
            session, "turn_end", event.model_dump(mode="json", exclude={"type", "ts"}), event
        )
        self.flush(session)

    # --- helpers -------------------------------------------------------------------------------

    def _tracker(self, session: Session) -> Tracker:
        tracker = self.trackers.get(session.id)
        if tracker is not None:
            return tracker
        tracker = Tracker(
            known_ids={m.id for m in session.transcript},
            active_ids=[m.id for m in session.active],
            state=_state_json(session.state),
            model=session.model,
            provider=session.provider.name,
            titled=bool(session.resumed),
        )
        self.store.ensure_session(
            session.id,
            workspace=str(session.workspace),
            provider=session.provider.name,
            model=session.model,
            mode=session.mode,
            created=_now(),
        )
        self.trackers[session.id] = tracker
        return tracker

    def _append(
        self, session: Session, kind: str, data: Any, event: Any, **kwargs: Any
    ) -> int | None:
        return self._journal(session.id, kind, data, event, **kwargs)

    def _journal(
        self, session_id: str, kind: str, data: Any, event: Any, **kwargs: Any
    ) -> int | None:
        payload = data if isinstance(data, bytes) else dumps(data)
        # The event id is a keyed digest of the event (its timestamp included), so the
        # same event delivered twice is journaled once.
        event_id = self.store.event_id(
            session_id, f"{kind}\x00{event.ts!r}\x00" + payload.decode("utf-8", "replace")
        )
        return self.store.append(
            session_id, kind, payload, event_id=event_id, ts=event.ts, **kwargs
        )

    def _append_plain(self, session: Session, kind: str, data: Any) -> int | None:
        from ketch.api import new_id

        ts = _now()
        return self.store.append(
            session.id, kind, data, event_id=self.store.event_id(session.id, new_id()), ts=ts
        )

    def _active_items(self, session: Session, tracker: Tracker) -> list[dict[str, Any]]:
        """The active context by reference where a message is in the transcript, else in full."""
        known = tracker.known_ids
        return [
            {"ref": m.id} if m.id in known else {"message": m.model_dump(mode="json")}
            for m in session.active
        ]


def _state_json(state: dict[str, Any]) -> bytes:
    """Per-plugin state, keeping only the keys that are plain JSON."""
    kept: dict[str, Any] = {}
    for key, value in state.items():
        try:
            json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            continue
        kept[str(key)] = value
    return json.dumps(kept, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode(
        "utf-8"
    )


def _now() -> float:
    import time

    return time.time()
