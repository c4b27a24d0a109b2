"""Copy every session from one store to another (``ketch store migrate``), verified.

Each session is read and checked in the source (its chain, its binding, every field),
then written to the destination in one transaction with the *same* session id and
sequence numbers: its fields sealed under the destination's key, its chain and head
recomputed there, its binding made, its operations' keyed call ids re-keyed, and its
workspace's saved approvals carried along. Afterwards the destination checks it like
``ketch sessions verify`` does, and a digest of its content (header fields and every
entry's kind, time and plaintext) must equal the source's; a session already in the
destination with the same digest is skipped, one with another is an error.

Not carried: checkpoint blobs (their ids are keyed digests under the source's key, so
the whole content-addressed graph would have to be re-hashed); undo history starts
afresh in the destination. The source is never changed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ketch.api import KetchError
from ketch_store_kit.binding import rebind
from ketch_store_kit.chain import CHAIN, HEAD, head_input, link_input
from ketch_store_kit.journal import SqlJournal, entry_key

_CALL_KINDS = ("tool_started", "tool_result")


@dataclass
class Copied:
    sessions: int = 0
    skipped: int = 0
    entries: int = 0
    approvals: int = 0
    failed: list[str] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)


def _snapshot(store: SqlJournal, session_id: str) -> dict[str, Any]:
    """A session as plaintext: header, counters, entries (checked on the way)."""
    header = store._header(session_id)  # raises IntegrityError for a tampered binding
    with store.lock, store.reading(f"session {session_id}"):
        extra = store.conn.execute(
            "SELECT messages, last_seq FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        ops = store.conn.execute(
            "SELECT call_key, status, owner, dispatched_seq, finished_seq, updated FROM operations WHERE session_id = ?",
            (session_id,),
        ).fetchall()
    rows = {row.seq: row for row in store._rows(session_id)}
    entries = store.entries(session_id)  # checked: a broken chain is refused, never copied
    return {
        "header": header,
        "messages": int(extra[0]),
        "last_seq": int(extra[1]),
        "entries": [(seq, kind, ts, plain, rows[seq].event_id) for seq, kind, ts, plain in entries],
        "operations": [tuple(op) for op in ops],
    }


def digest(snapshot: dict[str, Any]) -> str:
    """The content of a session, independent of the store and key it lives under."""
    h = snapshot["header"]
    head = {
        k: h[k]
        for k in (
            "id",
            "workspace",
            "name",
            "title",
            "provider",
            "model",
            "mode",
            "created",
            "updated",
            "usage",
        )
    }
    hasher = hashlib.sha256(json.dumps(head, sort_keys=True, default=str).encode())
    hasher.update(str(snapshot["messages"]).encode())
    for seq, kind, ts, plain, _ in snapshot["entries"]:
        hasher.update(f"\x00{seq}\x00{kind}\x00{ts!r}\x00".encode() + plain)
    return hasher.hexdigest()


def session_digest(store: SqlJournal, session_id: str) -> str:
    return digest(_snapshot(store, session_id))


def _call_ids(snapshot: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    for _, kind, _, plain, _ in snapshot["entries"]:
        if kind.rsplit("/", 1)[-1] in _CALL_KINDS:
            call = json.loads(plain).get("tool_call_id")
            if isinstance(call, str):
                found.add(call)
    return found


def _write(dst: SqlJournal, snap: dict[str, Any], src: SqlJournal) -> None:
    h = snap["header"]
    sid = h["id"]
    f = dst.fields
    by_key = {src.call_key(sid, call): call for call in _call_ids(snap)}
    with dst.transaction(durable=True) as conn:
        usage = h["usage"]
        conn.execute(
            "INSERT INTO sessions (id, workspace_index, workspace, name, title, provider, model, mode, created, updated, "
            "messages, last_seq, input_tokens, output_tokens, cached_tokens, reasoning_tokens) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                sid,
                f.index(h["workspace"]),
                f.seal_text("sessions", "workspace", sid, h["workspace"]),
                f.seal_text("sessions", "name", sid, h["name"]) if h["name"] else None,
                f.seal_text("sessions", "title", sid, h["title"]) if h["title"] else None,
                h["provider"],
                h["model"],
                h["mode"],
                h["created"],
                h["updated"],
                snap["messages"],
                snap["last_seq"],
                usage["input_tokens"],
                usage["output_tokens"],
                usage["cached_tokens"],
                usage["reasoning_tokens"],
            ),
        )
        prev = b""
        rows = []
        for seq, kind, ts, plain, event_id in snap["entries"]:
            new_event = dst.event_id(sid, f"migrated\x00{event_id}")
            sealed = f.seal("journal", "payload", entry_key(sid, seq, kind, new_event), plain)
            prev = f.mac(CHAIN, link_input(sid, seq, kind, new_event, ts, sealed, prev))
            rows.append((sid, seq, new_event, kind, ts, sealed, prev))
        conn.executemany(
            "INSERT INTO journal (session_id, seq, event_id, kind, ts, payload, mac) VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.execute(
            "UPDATE sessions SET head = ? WHERE id = ?",
            (f.mac(HEAD, head_input(sid, snap["last_seq"], prev)), sid),
        )
        rebind(conn, f, sid)
        for key, status, _owner, dispatched, finished, updated in snap["operations"]:
            call = by_key.get(key)
            if call is None:
                continue
            conn.execute(
                "INSERT INTO operations (session_id, call_key, status, owner, dispatched_seq, finished_seq, updated) "
                "VALUES (?, ?, ?, '', ?, ?, ?)",
                (
                    sid,
                    dst.call_key(sid, call),
                    "unknown_outcome" if status == "dispatched" else status,
                    dispatched,
                    finished,
                    updated,
                ),
            )


def migrate(
    src: SqlJournal, dst: SqlJournal, say: Callable[[str], None] = lambda line: None
) -> Copied:
    """Copy every session of ``src`` into ``dst`` (see the module docstring)."""
    done = Copied()
    ids = src.session_ids()
    say(f"copying {len(ids):,} sessions")
    workspaces: set[str] = set()
    for number, sid in enumerate(ids, 1):
        try:
            snap = _snapshot(src, sid)
        except KetchError as exc:
            done.failed.append(
                f"{sid}: not copied, it does not verify in the source ({exc.message})"
            )
            continue
        want = digest(snap)
        workspaces.add(snap["header"]["workspace"])
        if dst.has_session(sid):
            if session_digest(dst, sid) == want:
                done.skipped += 1
                done.digests[sid] = want
                continue
            done.failed.append(
                f"{sid}: the destination has another session with this id; not copied"
            )
            continue
        _write(dst, snap, src)
        report = dst.verify_session(sid)
        got = session_digest(dst, sid) if report.ok else ""
        if not report.ok or got != want:
            done.failed.append(
                f"{sid}: copied, but it does not verify in the destination ({report.shown() or 'digest differs'})"
            )
            continue
        done.sessions += 1
        done.entries += len(snap["entries"])
        done.digests[sid] = want
        if number % 200 == 0:
            say(f"{number:,} of {len(ids):,} sessions copied")
    for workspace in sorted(workspaces):
        for scope in src.list_approvals(workspace):
            dst.add_approval(workspace, scope)
            done.approvals += 1
    return done
