"""Key rotation: every encrypted field re-encrypted under a new data key, in one transaction.

The steps, and what a kill between any two leaves (every state opens, with one of the
two keys, and the next open or ``rotate`` finishes the job):

1. ``meta.rotating = 1`` is committed (an open that sees it looks for a staged key);
2. the new key is staged with the provider, beside the current one;
3. one transaction re-seals the key check, the lookup-index key, every session's
   workspace, name and title, every journal payload (and recomputes its chain link
   and the session's head) and every approval. Killed inside it, SQLite rolls it
   back: everything is still under the old key;
4. the prompt history (the one file outside the database sealed with the data key)
   is re-sealed, atomically;
5. the provider promotes the staged key to current, which retires the old one;
6. ``meta.rotating`` is cleared.

An open after a kill in 1-2 (the old key opens the database) drops the staged key; after
3-5 (only the staged key opens it) finishes 4-6 itself. The lookup-index key is carried
over (indexes, event ids and MCP pin names stay valid); the chain key is derived from
the data key, so every link is recomputed.

Each phase is announced to ``phase`` (the command passes the ``store_rotation_phase``
hook, so a test's plugin can stop the process there and SIGKILL it exactly then):
locked, marked, staged, journal:N (after N entries), sessions-done, committed, history,
promoted.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.api import IntegrityError, KetchError
from ketch_prompt_kit.history_file import FILE_NAME as HISTORY_FILE
from ketch_prompt_kit.history_file import reseal as reseal_history
from ketch_store import owners
from ketch_store.schema import lift_triggers, restore_triggers
from ketch_store_kit.codec import Fields
from ketch_store_kit.reseal import reseal_all

if TYPE_CHECKING:  # pragma: no cover
    from ketch_store.store import SqliteStore


def _set_flag(conn: sqlite3.Connection, value: bytes | None) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        if value is None:
            conn.execute("DELETE FROM meta WHERE key = 'rotating'")
        else:
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('rotating', ?)", (value,)
            )
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise


def finish_interrupted(
    conn: sqlite3.Connection, old: Fields, new: Fields | None, history: Path | None = None
) -> None:
    """Open after a killed rotation: ``new`` None means it died before its commit (drop
    the staged key); else the database is under ``new`` (finish steps 4-6)."""
    manager = old.cipher.manager  # type: ignore[attr-defined]
    if new is None:
        manager.discard_pending()
    else:
        reseal_history(history, old.cipher, new.cipher)
        manager.promote(new.cipher.data_key())  # type: ignore[attr-defined]
    _set_flag(conn, None)


def rotate(
    store: SqliteStore,
    say: Callable[[str], None],
    phase: Callable[[str], None] = lambda name: None,
) -> dict[str, Any]:
    cipher = store.cipher
    manager = getattr(cipher, "manager", None)
    if not store.encrypted or manager is None or not hasattr(cipher, "with_key"):
        raise KetchError(
            "this session store has no rotatable key (storage.encryption is off, or the cipher is not ketch's)",
            exit_code=2,
        )
    if store._users is None or not owners.make_exclusive(store._users):
        raise KetchError(
            "other ketch processes have the session store open (a shell, a headless run, `ketch sessions`); "
            "close them and run `ketch store key rotate` again"
        )
    phase("locked")
    began = time.monotonic()
    old = store.fields
    new_key = os.urandom(32)
    new = Fields(cipher.with_key(new_key))  # type: ignore[attr-defined]
    _set_flag(store.conn, b"1")
    phase("marked")
    manager.stage(new_key)
    phase("staged")
    with store.lock:
        counts = _reseal_database(store.conn, old, new, say, phase)
    phase("committed")
    reseal_history(store.path.parent / HISTORY_FILE, old.cipher, new.cipher)
    phase("history")
    manager.promote(new_key)
    phase("promoted")
    _set_flag(store.conn, None)
    store.fields = new
    counts["seconds"] = round(time.monotonic() - began, 3)
    counts["key_id"] = new.cipher.key_id  # type: ignore[attr-defined]
    return counts


def _reseal_database(
    conn: sqlite3.Connection,
    old: Fields,
    new: Fields,
    say: Callable[[str], None],
    phase: Callable[[str], None],
) -> dict[str, Any]:
    sessions = int(conn.execute("SELECT count(*) FROM sessions").fetchone()[0])
    total = int(conn.execute("SELECT count(*) FROM journal").fetchone()[0])
    say(
        f"re-encrypting {sessions:,} sessions and {total:,} journal entries under a new key (one transaction)"
    )
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("BEGIN IMMEDIATE")
    try:
        lift_triggers(conn)
        counts = reseal_all(conn, old, new, on_entry=lambda done: phase(f"journal:{done}"))
        phase("sessions-done")
        conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('rotated', ?)",
            (str(time.time()).encode(),),
        )
        restore_triggers(conn)
        conn.execute("COMMIT")
    except IntegrityError as exc:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise KetchError(
            f"rotation stopped, nothing changed: a field does not open under the current key ({exc}). "
            "Run `ketch sessions verify --all`, delete or export what is damaged, then rotate again"
        ) from None
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    finally:
        conn.execute("PRAGMA synchronous = NORMAL")
    return counts
