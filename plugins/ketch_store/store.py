"""The SQLite session store: one database per OS user, WAL, every sensitive field sealed.

Opening (serialized across processes by a lock file beside the database):

1. a new database mints the data key (``cipher.unlock(create=True)``), creates the
   schema and records a key check; an existing one must open with the key already in
   the keyring (``create=False``): missing, locked or unreadable is ``RecoveryLocked``,
   a different key is ``IntegrityError``; in both cases nothing is written;
2. migrations bring the schema up to date;
3. the recovery pass marks every operation whose process died while it was in flight
   ``unknown_outcome``, and journals that.

Writes go through :meth:`SqliteStore.append`: one ``BEGIN IMMEDIATE`` transaction that
skips an event id already journaled, allocates the session's next sequence number,
inserts the sealed entry and applies the entry's side effects (operations, counters).
Dispatches and outcomes of tool calls commit with ``synchronous=FULL`` (they must
survive a power cut); everything else with ``NORMAL`` (survives a crash of the process).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ketch.errors import KetchError
from ketch.storage import FieldCipher, IntegrityError, SessionRecord, SessionSummary
from ketch_store import owners
from ketch_store.codec import Fields, PlainCodec, dumps
from ketch_store.schema import SCHEMA_VERSION, SchemaTooNew, migrate

KEY_CHECK = b"ketch key check v1"
BUSY_TIMEOUT_MS = 10_000
TITLE_CHARS = 80

Extra = Callable[[sqlite3.Connection, int], None]


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def _has_tables(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0


def _meta(conn: sqlite3.Connection) -> dict[str, bytes]:
    try:
        rows = conn.execute("SELECT key, value FROM meta").fetchall()
    except sqlite3.DatabaseError:
        return {}
    return {key: bytes(value) if not isinstance(value, str) else value.encode() for key, value in rows}


def _never_used(conn: sqlite3.Connection) -> bool:
    try:
        return conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0 and _meta(conn) == {}
    except sqlite3.DatabaseError:
        return False


class SqliteStore:
    """Implements :class:`ketch.storage.Store`, plus the journal the recorder writes."""

    def __init__(self, path: Path, conn: sqlite3.Connection, fields: Fields) -> None:
        self.path = path
        self.conn = conn
        self.fields = fields
        self.lock = threading.RLock()
        self.owners_dir = path.parent / "owners"
        self._owner: owners.OwnerLock | None = None
        self.recovered: list[tuple[str, str]] = []  # (session id, call key) marked unknown at open
        self.recorder: Any = None  # set by the plugin: the event observer for this store

    @property
    def encrypted(self) -> bool:
        return self.fields.encrypted

    @functools.cached_property
    def blobs(self) -> Any:
        """Content-addressed encrypted blobs (:mod:`ketch_store.blobs`; checkpoints)."""
        from ketch_store.blobs import Blobs

        return Blobs(self)

    # --- opening ------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path, cipher: FieldCipher | None, *, encryption: str = "on") -> SqliteStore:
        if cipher is None and encryption != "off":
            raise KetchError(
                'no encryption plugin is loaded, and storage.encryption is "on": refusing to store sessions in '
                "plaintext. Enable the 'crypto' plugin, or set storage.encryption = \"off\" in config.toml to "
                "keep sessions unencrypted."
            )
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with owners.exclusive(path.with_name(path.name + ".lock")):
                return cls._open_file(path, cipher)
        except OSError as exc:
            raise KetchError(f"cannot open the session store in {path.parent}: {exc.strerror or exc}") from None

    @classmethod
    def _open_file(cls, path: Path, cipher: FieldCipher | None) -> SqliteStore:
        fresh = not path.exists() or path.stat().st_size == 0
        if fresh:
            # Owner-only from the start; SQLite gives -wal/-shm the same mode.
            with contextlib.suppress(FileExistsError):
                path.touch(mode=0o600, exist_ok=False)
        try:
            conn = _connect(path)
        except sqlite3.Error as exc:
            raise KetchError(f"cannot open the session store {path}: {exc}") from None
        try:
            return cls._open_locked(path, conn, cipher, fresh)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise KetchError(f"cannot open the session store {path}: {exc} (is it a ketch sessions.db?)") from None
        except BaseException:
            conn.close()
            raise

    @classmethod
    def _open_locked(cls, path: Path, conn: sqlite3.Connection, cipher: FieldCipher | None, fresh: bool) -> SqliteStore:
        if not fresh and not _has_tables(conn):
            fresh = True  # an empty file (e.g. created and never written): start it
        meta = {} if fresh else _meta(conn)
        if not fresh and not meta and _never_used(conn):
            fresh = True  # the first open died between creating the schema and writing meta
        if not fresh:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise KetchError(f"{path} was written by a newer ketch (schema {version}, this one knows {SCHEMA_VERSION}); upgrade ketch to open it")
            if "encryption" not in meta:
                raise KetchError(f"{path} is not a ketch session store (no meta record); move it away and run again")
        codec: FieldCipher = cipher if cipher is not None else PlainCodec()
        fields = Fields(codec)
        if not fresh:
            cls._check_mode(path, meta, fields)
        unlock = getattr(codec, "unlock", None)
        if fields.encrypted and callable(unlock):
            unlock(create=fresh)
        if not fresh and fields.encrypted:
            try:
                ok = fields.open("meta", "keycheck", "store", meta.get("keycheck", b"")) == KEY_CHECK
            except IntegrityError:
                ok = False
            if not ok:
                raise IntegrityError(
                    f"the session key in the OS keyring does not open {path} (a different key, or a tampered key "
                    "check): nothing was read or written. Restore the key that wrote it, or move the database away "
                    "to start over."
                )
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA secure_delete = ON")
        conn.execute("PRAGMA foreign_keys = ON")
        try:
            migrate(conn)
        except SchemaTooNew as exc:
            raise KetchError(f"{path}: {exc}") from None
        if fresh:
            with _transaction(conn):
                rows = [
                    ("encryption", b"on" if fields.encrypted else b"off"),
                    ("algorithm", str(codec.algorithm).encode()),
                    ("keycheck", fields.seal("meta", "keycheck", "store", KEY_CHECK)),
                    ("created", str(time.time()).encode()),
                ]
                conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", rows)
        store = cls(path, conn, fields)
        store.recover()
        return store

    @staticmethod
    def _check_mode(path: Path, meta: dict[str, bytes], fields: Fields) -> None:
        was_encrypted = meta.get("encryption") == b"on"
        if was_encrypted and not fields.encrypted:
            raise KetchError(
                f'{path} is encrypted, but storage.encryption is "off" (or no encryption plugin is loaded): '
                'set it back to "on" to use these sessions.'
            )
        if not was_encrypted and fields.encrypted:
            raise KetchError(
                f'{path} was created unencrypted (storage.encryption = "off"); ketch does not mix plaintext and '
                'encrypted sessions. Set storage.encryption = "off" to keep using it, or move it away to start an '
                "encrypted store."
            )

    # --- transactions ---------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, *, durable: bool = False) -> Iterator[sqlite3.Connection]:
        with self.lock:
            if durable:
                self.conn.execute("PRAGMA synchronous = FULL")
            try:
                with _transaction(self.conn):
                    yield self.conn
            except sqlite3.OperationalError as exc:
                raise KetchError(f"the session store is unavailable: {exc}") from None
            finally:
                if durable:
                    self.conn.execute("PRAGMA synchronous = NORMAL")

    # --- sessions ------------------------------------------------------------------------------

    def ensure_session(self, session_id: str, *, workspace: str, provider: str, model: str, mode: str, created: float) -> None:
        with self.transaction() as conn:
            row = conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO sessions (id, workspace_index, workspace, provider, model, mode, created, updated) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        session_id,
                        self.fields.index(workspace),
                        self.fields.seal_text("sessions", "workspace", session_id, workspace),
                        provider,
                        model,
                        mode,
                        created,
                        created,
                    ),
                )
            else:
                conn.execute("UPDATE sessions SET provider = ?, model = ?, mode = ? WHERE id = ?", (provider, model, mode, session_id))

    def update_session(self, session_id: str, **columns: Any) -> None:
        """Set plain columns (model, provider, mode, token counters)."""
        allowed = {"provider", "model", "mode", "input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens"}
        names = [name for name in columns if name in allowed]
        if not names:
            return
        assignments = ", ".join(f"{name} = ?" for name in names)
        with self.transaction() as conn:
            conn.execute(f"UPDATE sessions SET {assignments} WHERE id = ?", (*[columns[n] for n in names], session_id))

    def set_title(self, session_id: str, text: str) -> None:
        title = " ".join(text.split())[:TITLE_CHARS]
        with self.transaction() as conn:
            conn.execute(
                "UPDATE sessions SET title = ? WHERE id = ? AND title IS NULL",
                (self.fields.seal_text("sessions", "title", session_id, title), session_id),
            )

    def message_count(self, session_id: str) -> int:
        with self.lock:
            row = self.conn.execute("SELECT messages FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return int(row[0]) if row else 0

    def has_session(self, session_id: str) -> bool:
        with self.lock:
            return self.conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is not None

    def resolve_id(self, text: str) -> str:
        """A full session id from an id or a unique prefix of one."""
        text = text.strip()
        if not text:
            raise KetchError("no session id given", exit_code=2)
        with self.lock:
            if self.conn.execute("SELECT 1 FROM sessions WHERE id = ?", (text,)).fetchone():
                return text
            pattern = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            rows = self.conn.execute("SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' LIMIT 2", (pattern,)).fetchall()
        if not rows:
            raise KetchError(f"no session '{text}' (ketch sessions list --all shows every session)")
        if len(rows) > 1:
            raise KetchError(f"'{text}' matches more than one session; give more of the id", exit_code=2)
        return str(rows[0][0])

    # --- the journal ---------------------------------------------------------------------------

    def append(
        self,
        session_id: str,
        kind: str,
        data: Any,
        *,
        event_id: str,
        ts: float,
        messages: int = 0,
        durable: bool = False,
        extra: Extra | None = None,
    ) -> int | None:
        """Journal one entry; returns its sequence number, or None if ``event_id`` was already there.

        ``data`` is JSON-able, or bytes already serialized as JSON. ``extra(conn, seq)``
        runs inside the same transaction (operations, counters).
        """
        payload = data if isinstance(data, bytes) else dumps(data)
        with self.transaction(durable=durable) as conn:
            if conn.execute("SELECT 1 FROM journal WHERE event_id = ?", (event_id,)).fetchone():
                return None
            cursor = conn.execute(
                "UPDATE sessions SET last_seq = last_seq + 1, messages = messages + ?, updated = max(updated, ?) WHERE id = ?",
                (messages, ts, session_id),
            )
            if cursor.rowcount != 1:
                raise KetchError(f"session {session_id} is not in the store (deleted meanwhile?)")
            seq = int(conn.execute("SELECT last_seq FROM sessions WHERE id = ?", (session_id,)).fetchone()[0])
            sealed = self.fields.seal("journal", "payload", _entry_key(session_id, seq, kind, event_id), payload)
            conn.execute(
                "INSERT INTO journal (session_id, seq, event_id, kind, ts, payload) VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, seq, event_id, kind, ts, sealed),
            )
            if extra is not None:
                extra(conn, seq)
            return seq

    def entries(self, session_id: str) -> list[tuple[int, str, float, bytes]]:
        """Every journal entry of a session, decrypted: (seq, kind, ts, JSON bytes)."""
        with self.lock:
            rows = self.conn.execute(
                "SELECT seq, event_id, kind, ts, payload FROM journal WHERE session_id = ? ORDER BY seq", (session_id,)
            ).fetchall()
        opened = self.fields.open
        return [(seq, kind, ts, opened("journal", "payload", _entry_key(session_id, seq, kind, event_id), payload)) for seq, event_id, kind, ts, payload in rows]

    def event_id(self, session_id: str, text: str) -> str:
        """A journal event id: a keyed digest, so ids reveal nothing of the content."""
        return "ev_" + self.fields.index(f"{session_id}\x00{text}")[:40]

    # --- operations -------------------------------------------------------------------------------

    def call_key(self, session_id: str, tool_call_id: str) -> str:
        return self.fields.index(f"call\x00{session_id}\x00{tool_call_id}")[:40]

    def owner_id(self) -> str:
        if self._owner is None:
            self._owner = owners.OwnerLock(self.owners_dir)
            atexit.register(self._release_owner)  # a clean exit leaves no lock file behind
        return self._owner.id

    def operation_statuses(self, session_id: str) -> dict[str, str]:
        with self.lock:
            rows = self.conn.execute("SELECT call_key, status FROM operations WHERE session_id = ?", (session_id,)).fetchall()
        return {key: status for key, status in rows}

    def recover(self) -> list[tuple[str, str]]:
        """Mark operations whose process died in flight ``unknown_outcome``, and journal it."""
        with self.lock:
            rows = self.conn.execute(
                "SELECT session_id, call_key, owner, dispatched_seq FROM operations WHERE status = 'dispatched'"
            ).fetchall()
        alive: dict[str, bool] = {}
        dead_owners: set[str] = set()
        for session_id, call_key, owner, dispatched_seq in rows:
            if owner not in alive:
                alive[owner] = owners.owner_alive(self.owners_dir, owner)
            if alive[owner]:
                continue
            dead_owners.add(owner)
            now = time.time()

            def mark(conn: sqlite3.Connection, seq: int, sid: str = session_id, key: str = call_key, at: float = now) -> None:
                conn.execute(
                    "UPDATE operations SET status = 'unknown_outcome', finished_seq = ?, updated = ? "
                    "WHERE session_id = ? AND call_key = ? AND status = 'dispatched'",
                    (seq, at, sid, key),
                )

            self.append(
                session_id,
                "recovery",
                {"dispatched_seq": dispatched_seq, "status": "unknown_outcome"},
                event_id=self.event_id(session_id, f"recovery\x00{call_key}\x00{dispatched_seq}"),
                ts=now,
                durable=True,
                extra=mark,
            )
            self.recovered.append((session_id, call_key))
        for owner in dead_owners:
            owners.forget(self.owners_dir, owner)
        self._sweep_owner_files()
        return self.recovered

    def _sweep_owner_files(self) -> None:
        if not self.owners_dir.is_dir():
            return
        with self.lock:
            busy = {row[0] for row in self.conn.execute("SELECT DISTINCT owner FROM operations WHERE status = 'dispatched'")}
        for lock_file in self.owners_dir.glob("*.lock"):
            owner = lock_file.stem
            if owner not in busy and not owners.owner_alive(self.owners_dir, owner):
                owners.forget(self.owners_dir, owner)

    # --- the Store protocol -----------------------------------------------------------------------

    def latest_session_id(self, workspace: str) -> str | None:
        with self.lock:
            row = self.conn.execute(
                "SELECT id FROM sessions WHERE workspace_index = ? AND messages > 0 ORDER BY updated DESC LIMIT 1",
                (self.fields.index(workspace),),
            ).fetchone()
        return str(row[0]) if row else None

    def load_session(self, session_id: str) -> SessionRecord:
        return self.history(session_id).record

    def read_session(self, session_id: str) -> SessionRecord:
        """The session's record, read without taking it over (commands that look)."""
        return self.history(session_id).record

    def append_event(self, session_id: str, event: Any) -> int | None:
        """Journal one event for a stored session (a command's rewind of a session no
        live session of this process holds), as the recorder would have."""
        session_id = self.resolve_id(session_id)
        payload = dumps(event.model_dump(mode="json", exclude={"type", "ts"}))
        event_id = self.event_id(session_id, f"{event.type}\x00{event.ts!r}\x00" + payload.decode("utf-8", "replace"))
        return self.append(session_id, event.type, payload, event_id=event_id, ts=event.ts)

    def history(self, session_id: str) -> Any:
        """The record plus the operation history (:class:`ketch_store.record.Loaded`)."""
        from ketch_store.record import build

        session_id = self.resolve_id(session_id)
        with self.lock:
            row = self.conn.execute(
                "SELECT workspace, name, title, provider, model, mode, created, updated, input_tokens, output_tokens, "
                "cached_tokens, reasoning_tokens FROM sessions WHERE id = ?",
                (session_id,),
            ).fetchone()
        if row is None:
            raise KetchError(f"no session '{session_id}'")
        workspace, name, title, provider, model, mode, created, updated, tin, tout, tcached, treason = row
        header = {
            "id": session_id,
            "workspace": self.fields.open_text("sessions", "workspace", session_id, workspace),
            "name": self.fields.open_text("sessions", "name", session_id, name),
            "title": self.fields.open_text("sessions", "title", session_id, title),
            "provider": provider,
            "model": model,
            "mode": mode,
            "created": created,
            "updated": updated,
            "usage": {"input_tokens": tin, "output_tokens": tout, "cached_tokens": tcached, "reasoning_tokens": treason},
        }
        with _gc_paused():  # thousands of small objects at once: collection would only slow it
            return build(header, self.entries(session_id), self.operation_statuses(session_id), self.call_key)

    def list_sessions(self, workspace: str | None = None, *, errors: list[str] | None = None) -> list[SessionSummary]:
        """Sessions, newest first. With ``errors``, a record that fails authentication is
        reported there and skipped; without, it raises ``IntegrityError``."""
        query = "SELECT id, workspace, name, title, model, mode, created, updated, messages FROM sessions WHERE messages > 0"
        params: tuple[Any, ...] = ()
        if workspace is not None:
            query += " AND workspace_index = ?"
            params = (self.fields.index(workspace),)
        with self.lock:
            rows = self.conn.execute(query + " ORDER BY updated DESC", params).fetchall()
        found: list[SessionSummary] = []
        text = self.fields.open_text
        for sid, ws, name, title, model, mode, created, updated, count in rows:
            try:
                found.append(
                    SessionSummary(
                        id=sid,
                        name=text("sessions", "name", sid, name),
                        title=text("sessions", "title", sid, title),
                        model=model,
                        mode=mode,
                        created=created,
                        updated=updated,
                        messages=count,
                        workspace=text("sessions", "workspace", sid, ws),
                    )
                )
            except IntegrityError as exc:
                if errors is None:
                    raise
                errors.append(f"session {sid}: {exc}")
        return found

    def delete_session(self, session_id: str) -> None:
        session_id = self.resolve_id(session_id)
        from ketch_store import blobs

        with self.transaction() as conn:
            conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            conn.execute("DELETE FROM journal WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM operations WHERE session_id = ?", (session_id,))
            blobs.forget_session(conn, session_id)
        self.blobs.collect_garbage(grace=blobs.DELETE_GRACE_SECONDS)

    def rename_session(self, session_id: str, name: str) -> None:
        session_id = self.resolve_id(session_id)
        name = " ".join(name.split())
        value = self.fields.seal_text("sessions", "name", session_id, name) if name else None
        with self.transaction() as conn:
            conn.execute("UPDATE sessions SET name = ? WHERE id = ?", (value, session_id))

    def list_approvals(self, workspace: str) -> list[str]:
        index = self.fields.index(workspace)
        with self.lock:
            rows = self.conn.execute(
                "SELECT scope_index, scope FROM approvals WHERE workspace_index = ? ORDER BY created", (index,)
            ).fetchall()
        return [self.fields.open_text("approvals", "scope", f"{index}/{key}", value) for key, value in rows]

    def add_approval(self, workspace: str, scope: str) -> None:
        index = self.fields.index(workspace)
        key = self.fields.index(f"scope\x00{scope}")
        sealed = self.fields.seal_text("approvals", "scope", f"{index}/{key}", scope)
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO approvals (workspace_index, scope_index, scope, created) VALUES (?, ?, ?, ?)",
                (index, key, sealed, time.time()),
            )

    def remove_approval(self, workspace: str, scope: str) -> bool:
        index = self.fields.index(workspace)
        key = self.fields.index(f"scope\x00{scope}")
        with self.transaction() as conn:
            return conn.execute("DELETE FROM approvals WHERE workspace_index = ? AND scope_index = ?", (index, key)).rowcount > 0

    def close(self) -> None:
        with self.lock:
            with contextlib.suppress(sqlite3.Error):
                self.conn.close()
            self._release_owner()

    def _release_owner(self) -> None:
        if self._owner is not None:
            self._owner.release()
            self._owner = None


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _entry_key(session_id: str, seq: int, kind: str, event_id: str) -> str:
    return f"{session_id}/{seq}/{kind}/{event_id}"
