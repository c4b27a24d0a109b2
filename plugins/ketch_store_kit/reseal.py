"""Re-sealing a whole store from one key to another (key rotation), in the caller's transaction.

Every sealed field moves to the new key: the key check and the sealed lookup-index key,
each session's workspace, name and title, every journal payload (its chain link and the
session's head recomputed, since the chain key derives from the data key), each
session's binding, every approval, and the checkpoint blobs and their records. Ids,
indexes and event ids stay: they use the lookup-index key, which a rotation carries over.
A field ``old`` does not open raises ``IntegrityError`` (the caller rolls back).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ketch_store_kit import blobs
from ketch_store_kit.binding import rebind
from ketch_store_kit.chain import CHAIN, HEAD, head_input, link_input
from ketch_store_kit.codec import Fields


def again(old: Fields, new: Fields, table: str, column: str, key: str, value: Any) -> bytes | None:
    """``value`` opened under ``old`` and sealed under ``new`` (None stays None)."""
    if value is None:
        return None
    return new.seal(table, column, key, old.open(table, column, key, bytes(value)))


def reseal_all(
    conn: Any, old: Fields, new: Fields, on_entry: Callable[[int], None] = lambda done: None
) -> dict[str, Any]:
    """Re-seal everything (see the module docstring); ``on_entry(n)`` after each journal entry."""
    counts: dict[str, Any] = {"sessions": 0, "entries": 0, "approvals": 0}
    for name in ("keycheck", "index_key"):
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (name,)).fetchone()
        if row is not None:
            conn.execute(
                "UPDATE meta SET value = ? WHERE key = ?",
                (again(old, new, "meta", name, "store", row[0]), name),
            )
    sessions = conn.execute(
        "SELECT id, workspace, name, title, last_seq FROM sessions ORDER BY id"
    ).fetchall()
    for session_id, workspace, name, title, last_seq in sessions:
        conn.execute(
            "UPDATE sessions SET workspace = ?, name = ?, title = ? WHERE id = ?",
            (
                again(old, new, "sessions", "workspace", session_id, workspace),
                again(old, new, "sessions", "name", session_id, name),
                again(old, new, "sessions", "title", session_id, title),
                session_id,
            ),
        )
        prev = b""
        rows = conn.execute(
            "SELECT seq, event_id, kind, ts, payload FROM journal WHERE session_id = ? ORDER BY seq",
            (session_id,),
        ).fetchall()
        for seq, event_id, kind, ts, payload in rows:
            entry = f"{session_id}/{seq}/{kind}/{event_id}"
            sealed = again(old, new, "journal", "payload", entry, payload)
            assert sealed is not None
            prev = new.mac(CHAIN, link_input(session_id, seq, kind, event_id, ts, sealed, prev))
            conn.execute(
                "UPDATE journal SET payload = ?, mac = ? WHERE session_id = ? AND seq = ?",
                (sealed, prev, session_id, seq),
            )
            counts["entries"] += 1
            on_entry(counts["entries"])
        conn.execute(
            "UPDATE sessions SET head = ? WHERE id = ?",
            (new.mac(HEAD, head_input(session_id, int(last_seq), prev)), session_id),
        )
        rebind(conn, new, session_id)
        counts["sessions"] += 1
    for index, key, scope in conn.execute(
        "SELECT workspace_index, scope_index, scope FROM approvals"
    ).fetchall():
        conn.execute(
            "UPDATE approvals SET scope = ? WHERE workspace_index = ? AND scope_index = ?",
            (again(old, new, "approvals", "scope", f"{index}/{key}", scope), index, key),
        )
        counts["approvals"] += 1
    blobs.reseal(conn, old, new)  # checkpoint blobs and their records: sealed fields too
    return counts
