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

``KETCH_TEST_ROTATE_PAUSE=<phase>`` stops the process (SIGSTOP) at that phase, so a test
can SIGKILL it exactly there; phases: locked, marked, staged, journal:N (after N entries),
sessions-done, committed, history, promoted.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.errors import KetchError
from ketch.storage import FieldCipher, IntegrityError
from ketch_store import owners
from ketch_store.schema import lift_triggers, restore_triggers
from ketch_store_kit.codec import Fields
from ketch_store_kit.reseal import reseal_all

if TYPE_CHECKING:  # pragma: no cover
    from ketch_store.store import SqliteStore

PAUSE_ENV = "KETCH_TEST_ROTATE_PAUSE"
HISTORY_FILE = "prompt-history"
HISTORY_HEADER = b"ketch prompt-history v1\n"


def pause_at(phase: str) -> None:
    if os.environ.get(PAUSE_ENV) == phase:
        print(f"ketch: paused at {phase}", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGSTOP)


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


def rotate(store: SqliteStore, say: Callable[[str], None]) -> dict[str, Any]:
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
    pause_at("locked")
    began = time.monotonic()
    old = store.fields
    new_key = os.urandom(32)
    new = Fields(cipher.with_key(new_key))  # type: ignore[attr-defined]
    _set_flag(store.conn, b"1")
    pause_at("marked")
    manager.stage(new_key)
    pause_at("staged")
    with store.lock:
        counts = _reseal_database(store.conn, old, new, say)
    pause_at("committed")
    reseal_history(store.path.parent / HISTORY_FILE, old.cipher, new.cipher)
    pause_at("history")
    manager.promote(new_key)
    pause_at("promoted")
    _set_flag(store.conn, None)
    store.fields = new
    counts["seconds"] = round(time.monotonic() - began, 3)
    counts["key_id"] = new.cipher.key_id  # type: ignore[attr-defined]
    return counts


def _reseal_database(
    conn: sqlite3.Connection, old: Fields, new: Fields, say: Callable[[str], None]
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
        counts = reseal_all(conn, old, new, on_entry=lambda done: pause_at(f"journal:{done}"))
        pause_at("sessions-done")
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


def _history_aad(index: int) -> bytes:
    return b"ketch/prompt-history/v1\x00" + str(index).encode("ascii")


def reseal_history(path: Path | None, old: FieldCipher, new: FieldCipher) -> int:
    """Re-seal the shell's prompt history (header + one base64 envelope per line, each
    bound to its position) from ``old`` to ``new``; lines already under ``new`` stay,
    lines neither opens stay as they are. Returns how many lines were re-sealed.

    The format is ``ketch_interactive.history``'s; it is restated here rather than
    imported so that rotating never loads a plugin the user disabled (a test writes
    the file with that module and reads it back after a rotation)."""
    if path is None:
        from ketch.paths import state_dir

        path = state_dir() / HISTORY_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    if not data.startswith(HISTORY_HEADER):
        return 0
    out, changed = [], 0
    for index, line in enumerate(data[len(HISTORY_HEADER) :].splitlines()):
        try:
            plain = old.decrypt(base64.b64decode(line, validate=True), _history_aad(index))
        except (IntegrityError, ValueError):
            out.append(line)
            continue
        out.append(base64.b64encode(new.encrypt(plain, _history_aad(index))))
        changed += 1
    if changed:
        tmp = path.with_name(path.name + ".rekey")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, HISTORY_HEADER + b"".join(line + b"\n" for line in out))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    return changed
