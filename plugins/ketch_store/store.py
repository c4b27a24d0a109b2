"""The SQLite session store: one database per OS user, WAL, every sensitive field sealed.

Opening (serialized across processes by a lock file beside the database; every open
store also holds a shared lock that a key rotation takes exclusively):

1. a new database mints the data key (``cipher.unlock(create=True)``), creates the
   schema and records a key check and the sealed lookup-index key; an existing one
   must open with the key its provider already holds (``create=False``): missing,
   locked or unreadable is ``RecoveryLocked``, a different key :class:`KeyDoesNotOpen`;
   nothing is written in either case. A rotation that died after its commit is
   finished here (the staged key opens the database: it becomes the key);
2. migrations bring the schema up to date (version 2 chains the journal);
3. the recovery pass marks every operation whose process died while it was in flight
   ``unknown_outcome``, and journals that.

Writes go through :meth:`SqliteStore.append`: one ``BEGIN IMMEDIATE`` transaction that
skips an event id already journaled, allocates the session's next sequence number,
inserts the sealed entry with its chain link (:mod:`ketch_store.chain`), moves the
session's head, and applies the entry's side effects (operations, counters).
Dispatches and outcomes of tool calls commit with ``synchronous=FULL`` (they must
survive a power cut); everything else with ``NORMAL`` (survives a crash of the process).
Only the process holding a session's writer lock (:mod:`ketch_store.writers`) appends
to it.

A damaged database page is a :class:`DamagedSession` naming what could not be read;
the rest of the store stays usable.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ketch.errors import KetchError
from ketch.messages import new_id
from ketch.storage import (
    FieldCipher,
    IntegrityError,
    SessionRecord,
    SessionSummary,
    StoreUnavailable,
)
from ketch_store import owners
from ketch_store.chain import CHAIN, HEAD, Report, Row, check, head_input, link_input
from ketch_store.codec import Fields, PlainCodec, dumps
from ketch_store.schema import (
    SCHEMA_VERSION,
    SchemaTooNew,
    lift_triggers,
    migrate,
    restore_triggers,
)
from ketch_store.writers import Writers

KEY_CHECK = b"ketch key check v1"
BUSY_TIMEOUT_MS = 10_000
TITLE_CHARS = 80
WRITER_WAIT = 60.0  # seconds a second writer waits for a session before forking it
ROTATION_WAIT = 120.0  # seconds an open waits for a key rotation in another process

Extra = Callable[[sqlite3.Connection, int], None]
DAMAGE_HINT = "`ketch sessions verify --all` names the damaged sessions; the others can still be listed and exported"


class KeyDoesNotOpen(StoreUnavailable, IntegrityError):
    """The key the provider holds is not the one the database was written under."""


class DamagedSession(KetchError):
    """Part of the database file is damaged (``database disk image is malformed``)."""


@contextlib.contextmanager
def reading(what: str) -> Iterator[None]:
    """SQLite errors met while reading ``what`` as one-line errors that say what to do."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        raise KetchError(f"the session store is unavailable while reading {what}: {exc}") from None
    except sqlite3.DatabaseError as exc:
        if not damaged(exc):
            raise
        raise DamagedSession(
            f"{what} cannot be read: sessions.db is damaged there ({exc}). {DAMAGE_HINT}"
        ) from None


def damaged(exc: sqlite3.DatabaseError) -> bool:
    """A damaged file ("database disk image is malformed", "file is not a database"), as
    opposed to a constraint, a closed connection or a busy lock."""
    return type(exc) is sqlite3.DatabaseError


def writer_wait(settings: Any) -> float:
    """``[storage] writer_wait``: seconds to wait for another writer of a session (then fork)."""
    from ketch.errors import ConfigError

    value = settings.section("storage").get("writer_wait", WRITER_WAIT)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigError(
            f"[storage] writer_wait = {value!r} is not a number of seconds (0 or more) in config.toml"
        )
    return float(value)


def workspace_filter_absent(params: tuple[Any, ...]) -> bool:
    return not params


def _remove_if_empty(path: Path) -> None:
    with contextlib.suppress(OSError):
        if path.stat().st_size == 0:
            path.unlink()
            for suffix in ("-wal", "-shm", "-journal"):
                path.with_name(path.name + suffix).unlink(missing_ok=True)


def _has_data(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def _has_tables(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0


def _meta(conn: sqlite3.Connection) -> dict[str, bytes]:
    try:
        rows = conn.execute("SELECT key, value FROM meta").fetchall()
    except sqlite3.DatabaseError:
        return {}
    return {
        key: bytes(value) if not isinstance(value, str) else value.encode() for key, value in rows
    }


def _never_used(conn: sqlite3.Connection) -> bool:
    try:
        return (
            conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0 and _meta(conn) == {}
        )
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
        self._users: int | None = None  # the shared lock every open store holds
        self.writers = Writers(path.parent / "writers")
        self.writer_wait = WRITER_WAIT
        self.recovered: list[tuple[str, str]] = []  # (session id, call key) marked unknown at open
        self.notices: list[
            str
        ] = []  # said once the next session starts (waits, forks, a finished rotation)
        self.say: Callable[[str], None] = (
            _stderr  # said at once (a wait the user is sitting through)
        )
        self.recorder: Any = None  # set by the plugin: the event observer for this store

    @property
    def encrypted(self) -> bool:
        return self.fields.encrypted

    @property
    def cipher(self) -> FieldCipher:
        return self.fields.cipher

    @functools.cached_property
    def blobs(self) -> Any:
        """Content-addressed encrypted blobs (:mod:`ketch_store.blobs`; checkpoints)."""
        from ketch_store.blobs import Blobs

        return Blobs(self)

    # --- opening ------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path, cipher: FieldCipher | None, *, encryption: str = "on") -> SqliteStore:
        exists = _has_data(path)
        if cipher is None and encryption != "off":
            raise StoreUnavailable(
                'no encryption plugin is loaded, and storage.encryption is "on": refusing to store sessions in '
                "plaintext. Enable the 'crypto' plugin, or set storage.encryption = \"off\" in config.toml to "
                "keep sessions unencrypted.",
                exists=exists,
            )
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with owners.exclusive(path.with_name(path.name + ".lock")):
                users = owners.shared(
                    path.with_name(path.name + ".users"), ROTATION_WAIT, _rotation_notice
                )
                try:
                    store = cls._open_file(path, cipher)
                except BaseException:
                    os.close(users)
                    raise
                store._users = users
                return store
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot open the session store in {path.parent}: {exc.strerror or exc}",
                exists=exists,
            ) from None
        except TimeoutError:
            raise StoreUnavailable(
                f"the session store {path} is being re-keyed by another ketch (`ketch store key rotate`); run again when it has finished",
                exists=True,
            ) from None

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
            raise StoreUnavailable(
                f"cannot open the session store {path}: {exc}", exists=not fresh
            ) from None
        try:
            return cls._open_checked(path, conn, cipher, fresh)
        except BaseException:
            conn.close()
            if fresh:
                _remove_if_empty(path)  # a store that never opened leaves nothing behind
            raise

    @classmethod
    def _open_checked(
        cls, path: Path, conn: sqlite3.Connection, cipher: FieldCipher | None, fresh: bool
    ) -> SqliteStore:
        try:
            return cls._open_locked(path, conn, cipher, fresh)
        except sqlite3.DatabaseError as exc:
            raise StoreUnavailable(
                f"cannot open the session store {path}: {exc}. If it is damaged beyond what ketch can read, move it away "
                "(or restore a backup) and run again; `ketch sessions verify --all` reports what is readable",
                exists=not fresh,
            ) from None

    @classmethod
    def _open_locked(
        cls, path: Path, conn: sqlite3.Connection, cipher: FieldCipher | None, fresh: bool
    ) -> SqliteStore:
        if not fresh and not _has_tables(conn):
            fresh = True  # an empty file (e.g. created and never written): start it
        meta = {} if fresh else _meta(conn)
        if not fresh and not meta and _never_used(conn):
            fresh = True  # the first open died between creating the schema and writing meta
        if not fresh:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise StoreUnavailable(
                    f"{path} was written by a newer ketch (schema {version}, this one knows {SCHEMA_VERSION}); upgrade ketch to open it",
                    exists=True,
                )
            if "encryption" not in meta:
                raise StoreUnavailable(
                    f"{path} is not a ketch session store (no meta record); move it away and run again",
                    exists=True,
                )
        codec: FieldCipher = cipher if cipher is not None else PlainCodec()
        fields = Fields(codec)
        if not fresh:
            cls._check_mode(path, meta, fields)
        bind = getattr(codec, "bind", None)
        if fields.encrypted and callable(bind):
            recorded = meta.get("key_provider")
            bind(path, recorded.decode("ascii", "replace") if recorded else None)
        unlock = getattr(codec, "unlock", None)
        if fields.encrypted and callable(unlock):
            unlock(create=fresh)
        if not fresh and fields.encrypted:
            fields = cls._key_that_opens(path, conn, meta, fields)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA secure_delete = ON")
        conn.execute("PRAGMA foreign_keys = ON")
        try:
            migrate(conn)
        except SchemaTooNew as exc:
            raise StoreUnavailable(f"{path}: {exc}", exists=True) from None
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
        store._settle_keys(fresh)
        # A damaged page somewhere must not keep every session closed: these passes skip it.
        for step, what in (
            (store._chain_unlinked, "chaining older journal entries"),
            (store.recover, "the crash-recovery pass"),
        ):
            try:
                step()
            except (sqlite3.DatabaseError, DamagedSession) as exc:
                store.notices.append(
                    f"{what} could not read the whole store ({exc}); {DAMAGE_HINT}"
                )
        return store

    @staticmethod
    def _check_mode(path: Path, meta: dict[str, bytes], fields: Fields) -> None:
        was_encrypted = meta.get("encryption") == b"on"
        if was_encrypted and not fields.encrypted:
            raise StoreUnavailable(
                f'{path} is encrypted, but storage.encryption is "off" (or no encryption plugin is loaded): '
                'set it back to "on" to use these sessions.',
                exists=True,
            )
        if not was_encrypted and fields.encrypted:
            raise StoreUnavailable(
                f'{path} was created unencrypted (storage.encryption = "off"); ketch does not mix plaintext and '
                'encrypted sessions. Set storage.encryption = "off" to keep using it, or move it away to start an '
                "encrypted store.",
                exists=True,
            )

    @staticmethod
    def _key_that_opens(
        path: Path, conn: sqlite3.Connection, meta: dict[str, bytes], fields: Fields
    ) -> Fields:
        """The fields whose key opens the key check: the current key, or (a rotation died
        after its commit) the staged one, which then becomes the key."""
        from ketch_store.rotate import HISTORY_FILE, finish_interrupted

        manager = getattr(fields.cipher, "manager", None)
        if _opens_keycheck(fields, meta):
            if manager is not None and meta.get("rotating") == b"1":
                finish_interrupted(
                    conn, fields, None
                )  # died before its commit: the staged key is unused
            return fields
        staged = manager.pending() if manager is not None and meta.get("rotating") == b"1" else None
        if staged is not None:
            candidate = Fields(fields.cipher.with_key(staged))  # type: ignore[attr-defined]
            if _opens_keycheck(candidate, meta):
                finish_interrupted(conn, fields, candidate, path.parent / HISTORY_FILE)
                return candidate
        where = (
            str(manager.status().get("where", "its key store"))
            if manager is not None
            else "the keyring"
        )
        raise KeyDoesNotOpen(
            f"the session key in {where} does not open {path} (a different key, or a tampered key check): nothing was "
            "read or written. Restore the key that wrote it (`ketch store key import` takes a recovery code), or move "
            "the database away to start over.",
            exists=True,
        )

    def _settle_keys(self, fresh: bool) -> None:
        """The lookup-index key: kept sealed in meta so it outlives key rotations."""
        cipher = self.fields.cipher
        set_index_key = getattr(cipher, "set_index_key", None)
        index_key = getattr(cipher, "index_key", None)
        if not self.encrypted or not callable(set_index_key) or not callable(index_key):
            return
        sealed = _meta(self.conn).get("index_key")
        if sealed is not None:
            set_index_key(self.fields.open("meta", "index_key", "store", sealed))
            return
        with self.transaction() as conn:  # a new store, or one from before the key was kept
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('index_key', ?)",
                (self.fields.seal("meta", "index_key", "store", index_key()),),
            )
            provider = getattr(getattr(cipher, "manager", None), "provider", None)
            if fresh and provider is not None:
                conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('key_provider', ?)",
                    (provider.name.encode(),),
                )

    def _chain_unlinked(self) -> None:
        """Chain the entries of sessions written before the journal was a chain (schema 1)."""
        with self.lock:
            todo = self.conn.execute(
                "SELECT id, last_seq FROM sessions WHERE head IS NULL AND last_seq > 0"
            ).fetchall()
        if not todo:
            return
        with self.transaction() as conn:
            lift_triggers(conn)
            for session_id, last_seq in todo:
                prev = b""
                rows = conn.execute(
                    "SELECT seq, event_id, kind, ts, payload FROM journal WHERE session_id = ? ORDER BY seq",
                    (session_id,),
                ).fetchall()
                for seq, event_id, kind, ts, payload in rows:
                    prev = self.fields.mac(
                        CHAIN, link_input(session_id, seq, kind, event_id, ts, payload, prev)
                    )
                    conn.execute(
                        "UPDATE journal SET mac = ? WHERE session_id = ? AND seq = ?",
                        (prev, session_id, seq),
                    )
                conn.execute(
                    "UPDATE sessions SET head = ? WHERE id = ?",
                    (self.fields.mac(HEAD, head_input(session_id, last_seq, prev)), session_id),
                )
            restore_triggers(conn)

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
            except sqlite3.DatabaseError as exc:
                if not damaged(exc):
                    raise
                raise DamagedSession(
                    f"the session store could not write: sessions.db is damaged ({exc}). {DAMAGE_HINT}"
                ) from None
            finally:
                if durable:
                    self.conn.execute("PRAGMA synchronous = NORMAL")

    # --- sessions ------------------------------------------------------------------------------

    def ensure_session(
        self,
        session_id: str,
        *,
        workspace: str,
        provider: str,
        model: str,
        mode: str,
        created: float,
    ) -> None:
        self.claim_now(session_id)
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
                conn.execute(
                    "UPDATE sessions SET provider = ?, model = ?, mode = ? WHERE id = ?",
                    (provider, model, mode, session_id),
                )

    def update_session(self, session_id: str, **columns: Any) -> None:
        """Set plain columns (model, provider, mode, token counters)."""
        allowed = {
            "provider",
            "model",
            "mode",
            "input_tokens",
            "output_tokens",
            "cached_tokens",
            "reasoning_tokens",
        }
        names = [name for name in columns if name in allowed]
        if not names:
            return
        assignments = ", ".join(f"{name} = ?" for name in names)
        with self.transaction() as conn:
            conn.execute(
                f"UPDATE sessions SET {assignments} WHERE id = ?",
                (*[columns[n] for n in names], session_id),
            )

    def set_title(self, session_id: str, text: str) -> None:
        title = " ".join(text.split())[:TITLE_CHARS]
        with self.transaction() as conn:
            conn.execute(
                "UPDATE sessions SET title = ? WHERE id = ? AND title IS NULL",
                (self.fields.seal_text("sessions", "title", session_id, title), session_id),
            )

    def message_count(self, session_id: str) -> int:
        with self.lock, reading(f"session {session_id}"):
            row = self.conn.execute(
                "SELECT messages FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
        return int(row[0]) if row else 0

    def has_session(self, session_id: str) -> bool:
        with self.lock, reading(f"session {session_id}"):
            return (
                self.conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()
                is not None
            )

    def resolve_id(self, text: str) -> str:
        """A full session id from an id or a unique prefix of one."""
        text = text.strip()
        if not text:
            raise KetchError("no session id given", exit_code=2)
        with self.lock, reading("the session list"):
            if self.conn.execute("SELECT 1 FROM sessions WHERE id = ?", (text,)).fetchone():
                return text
            pattern = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            rows = self.conn.execute(
                "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' LIMIT 2", (pattern,)
            ).fetchall()
        if not rows:
            rows = [(sid,) for sid in self._ids_named(text)][:2]
        if not rows:
            raise KetchError(f"no session '{text}' (ketch sessions list --all shows every session)")
        if len(rows) > 1:
            raise KetchError(
                f"'{text}' matches more than one session; give more of the id", exit_code=2
            )
        return str(rows[0][0])

    def _ids_named(self, name: str) -> list[str]:
        """Sessions whose name (given with /rename or `ketch sessions rename`) is ``name``,
        exactly, else ignoring case (names are encrypted: each is opened to compare)."""
        with self.lock, reading("the session list"):
            rows = self.conn.execute(
                "SELECT id, name FROM sessions WHERE name IS NOT NULL ORDER BY updated DESC"
            ).fetchall()
        named: list[tuple[str, str]] = []
        for sid, sealed in rows:
            with contextlib.suppress(KetchError):
                named.append((str(sid), self.fields.open_text("sessions", "name", sid, sealed)))
        exact = [sid for sid, value in named if value == name]
        return exact or [sid for sid, value in named if value.casefold() == name.casefold()]

    def session_ids(self) -> list[str]:
        """Every session id that can be read, even from a damaged store (by the id index
        first, so a damaged page of the table itself still leaves the ids)."""
        for query in (
            "SELECT id FROM sessions INDEXED BY sqlite_autoindex_sessions_1 ORDER BY id",
            "SELECT id FROM sessions ORDER BY id",
        ):
            try:
                with self.lock:
                    return [str(row[0]) for row in self.conn.execute(query)]
            except sqlite3.DatabaseError:
                continue
        with self.lock, contextlib.suppress(sqlite3.DatabaseError):
            return [
                str(row[0]) for row in self.conn.execute("SELECT DISTINCT session_id FROM journal")
            ]
        return []

    # --- one writer per session ------------------------------------------------------------

    def claim_now(self, session_id: str) -> None:
        """This process writes ``session_id``: take its writer lock, or refuse."""
        if not self.writers.try_claim(session_id):
            raise KetchError(
                f"session {session_id} is being written by another ketch ({self.writers.holder(session_id)}); "
                "ketch never interleaves two writers in one session"
            )

    def claim_for_resume(self, session_id: str) -> str:
        """The id this process may write to continue ``session_id``: the session itself
        once its writer lock is ours, else (after ``writer_wait`` seconds) a fork of it."""
        began = time.monotonic()
        told: list[str] = []

        def waiting(holder: str) -> None:
            told.append(holder)
            if self.writer_wait > 0:
                self.say(
                    f"session {session_id} is being written by another ketch ({holder}); waiting up to {self.writer_wait:g}s for it to finish (Ctrl-C stops)"
                )

        if self.writers.claim(session_id, self.writer_wait, waiting):
            if told:
                self.notices.append(
                    f"waited {time.monotonic() - began:.1f}s for another ketch ({told[0]}) to finish writing session {session_id}"
                )
            return session_id
        fork = self.fork_session(session_id)
        self.notices.append(
            f"session {session_id} is still being written by another ketch ({told[0] if told else 'another process'}); "
            f"continuing in a new session {fork}, forked from its history (both are kept: `ketch sessions list`)"
        )
        return fork

    def release(self, session_id: str) -> None:
        self.writers.release(session_id)

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
        self.claim_now(session_id)
        with self.transaction(durable=durable) as conn:
            return self._append_in(
                conn,
                session_id,
                kind,
                payload,
                event_id=event_id,
                ts=ts,
                messages=messages,
                extra=extra,
            )

    def _append_in(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        kind: str,
        payload: bytes,
        *,
        event_id: str,
        ts: float,
        messages: int = 0,
        extra: Extra | None = None,
    ) -> int | None:
        if conn.execute("SELECT 1 FROM journal WHERE event_id = ?", (event_id,)).fetchone():
            return None
        cursor = conn.execute(
            "UPDATE sessions SET last_seq = last_seq + 1, messages = messages + ?, updated = max(updated, ?) WHERE id = ?",
            (messages, ts, session_id),
        )
        if cursor.rowcount != 1:
            raise KetchError(f"session {session_id} is not in the store (deleted meanwhile?)")
        seq = int(
            conn.execute("SELECT last_seq FROM sessions WHERE id = ?", (session_id,)).fetchone()[0]
        )
        previous = conn.execute(
            "SELECT mac FROM journal WHERE session_id = ? AND seq = ?", (session_id, seq - 1)
        ).fetchone()
        prev = bytes(previous[0]) if previous is not None and previous[0] is not None else b""
        sealed = self.fields.seal(
            "journal", "payload", _entry_key(session_id, seq, kind, event_id), payload
        )
        mac = self.fields.mac(CHAIN, link_input(session_id, seq, kind, event_id, ts, sealed, prev))
        conn.execute(
            "INSERT INTO journal (session_id, seq, event_id, kind, ts, payload, mac) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (session_id, seq, event_id, kind, ts, sealed, mac),
        )
        conn.execute(
            "UPDATE sessions SET head = ? WHERE id = ?",
            (self.fields.mac(HEAD, head_input(session_id, seq, mac)), session_id),
        )
        if extra is not None:
            extra(conn, seq)
        return seq

    def _rows(self, session_id: str) -> list[Row]:
        with self.lock, reading(f"session {session_id}"):
            rows = self.conn.execute(
                "SELECT seq, event_id, kind, ts, payload, mac FROM journal WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        return [
            Row(seq, event_id, kind, ts, bytes(payload), None if mac is None else bytes(mac))
            for seq, event_id, kind, ts, payload, mac in rows
        ]

    def _end(self, session_id: str) -> tuple[int, bytes | None]:
        with self.lock, reading(f"session {session_id}"):
            row = self.conn.execute(
                "SELECT last_seq, head FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
        if row is None:
            return 0, None
        return int(row[0]), None if row[1] is None else bytes(row[1])

    def entries(self, session_id: str) -> list[tuple[int, str, float, bytes]]:
        """Every journal entry of a session, decrypted and checked: (seq, kind, ts, JSON bytes).

        Raises ``IntegrityError`` naming every problem when an entry fails to decrypt or
        the chain does not hold (a deleted, truncated, reordered, replayed or copied entry).
        """
        rows = self._rows(session_id)
        last_seq, head = self._end(session_id)
        opened: list[tuple[int, str, float, bytes]] = []
        fine: dict[int, bool] = {}
        link, seal_open = self.fields.mac_for(CHAIN), self.fields.open
        intact, prev, expected = True, b"", 1
        for row in rows:
            try:
                plain = seal_open(
                    "journal",
                    "payload",
                    _entry_key(session_id, row.seq, row.kind, row.event_id),
                    row.payload,
                )
            except IntegrityError:
                fine[row.seq] = intact = False
                continue
            fine[row.seq] = True
            if (
                row.seq != expected
                or row.mac is None
                or link(
                    link_input(
                        session_id, row.seq, row.kind, row.event_id, row.ts, row.payload, prev
                    )
                )
                != row.mac
            ):
                intact = False
            prev, expected = row.mac or b"", row.seq + 1
            opened.append((row.seq, row.kind, row.ts, plain))
        if intact and (
            expected - 1 != last_seq
            or (rows and self.fields.mac(HEAD, head_input(session_id, last_seq, prev)) != head)
        ):
            intact = False
        if not intact:
            report = self._check(session_id, rows, last_seq, head, fine)
            if report.damage:
                raise DamagedSession(
                    f"session {session_id} cannot be read: sessions.db is damaged there ({report.damage}; {report.shown()}). {DAMAGE_HINT}"
                )
            raise report.error()
        return opened

    def _check(
        self,
        session_id: str,
        rows: list[Row],
        last_seq: int,
        head: bytes | None,
        fine: dict[int, bool] | None = None,
    ) -> Report:
        def opens(sid: str, seq: int, kind: str, event_id: str, payload: bytes) -> bool:
            return self.fields.opens(
                "journal", "payload", _entry_key(sid, seq, kind, event_id), payload
            )

        def at_the_same_place(seq: int) -> list[tuple[str, str, str]]:
            with self.lock, contextlib.suppress(sqlite3.DatabaseError):
                return [
                    tuple(r)
                    for r in self.conn.execute(
                        "SELECT session_id, kind, event_id FROM journal WHERE seq = ? AND session_id != ? LIMIT 5000",
                        (seq, session_id),
                    )
                ]  # type: ignore[misc]
            return []

        report = check(
            session_id,
            rows,
            last_seq,
            head,
            self.fields.mac,
            opens,
            other_sessions=at_the_same_place,
            payload_ok=fine,
        )
        if not report.ok:
            report.damage = self.damage()
        return report

    def damage(self) -> str | None:
        """What SQLite's own check finds wrong with the file (None: the file is sound, so a
        broken chain was done to it, not by the disk)."""
        try:
            with self.lock:
                found = [str(row[0]) for row in self.conn.execute("PRAGMA quick_check(3)")]
        except sqlite3.DatabaseError as exc:
            return str(exc)
        if found == ["ok"]:
            return None
        lines = [
            line.strip()
            for text in found
            for line in text.splitlines()
            if line.strip() and not line.startswith("***")
        ]
        return "; ".join(lines) or "quick_check failed"

    def verify_session(self, session_id: str) -> Report:
        """Check every encrypted field of a session and its journal chain; never raises
        for what it finds (that is the report)."""
        report = Report(session_id)
        try:
            with self.lock, reading(f"session {session_id}"):
                header = self.conn.execute(
                    "SELECT workspace, name, title, last_seq, head FROM sessions WHERE id = ?",
                    (session_id,),
                ).fetchone()
        except DamagedSession as exc:
            report.problems.append(
                f"its record cannot be read: the database is damaged there ({_cause(exc)})"
            )
            header = None
        if header is not None:
            for column, value in zip(("workspace", "name", "title"), header[:3], strict=True):
                if value is None:
                    continue
                report.fields += 1
                if not self.fields.opens("sessions", column, session_id, bytes(value)):
                    report.problems.append(
                        f"its {column} does not authenticate (altered, moved from another session, or another key)"
                    )
        try:
            rows = self._rows(session_id)
        except DamagedSession as exc:
            report.problems.append(
                f"its journal cannot be read: the database is damaged there ({_cause(exc)})"
            )
            return report
        last_seq = int(header[3]) if header is not None else (rows[-1].seq if rows else 0)
        head = None if header is None or header[4] is None else bytes(header[4])
        journal = self._check(session_id, rows, last_seq, head)
        report.entries, report.fields = journal.entries, report.fields + len(rows)
        if journal.damage:
            report.damage = journal.damage
            journal.problems = [
                f"the database is damaged there ({journal.damage}): {p}" for p in journal.problems
            ]
        report.problems += journal.problems
        return report

    def verify_store(self) -> list[str]:
        """Problems with the store-wide records: the file itself, the key check, the index key, approvals."""
        problems: list[str] = []
        damage = self.damage()
        if damage:
            problems.append(f"sessions.db is damaged (SQLite: {damage})")
        try:
            meta = _meta(self.conn)
            if self.encrypted and not _opens_keycheck(self.fields, meta):
                problems.append("the key check does not authenticate")
            if (
                self.encrypted
                and "index_key" in meta
                and not self.fields.opens("meta", "index_key", "store", meta["index_key"])
            ):
                problems.append("the sealed lookup-index key does not authenticate")
            with self.lock:
                rows = self.conn.execute(
                    "SELECT workspace_index, scope_index, scope FROM approvals"
                ).fetchall()
            bad = sum(
                1
                for index, key, value in rows
                if not self.fields.opens("approvals", "scope", f"{index}/{key}", bytes(value))
            )
            if bad:
                problems.append(f"{bad} saved approval(s) do not authenticate")
            problems += self.blobs.verify()
        except sqlite3.DatabaseError as exc:
            problems.append(
                f"the store's own records cannot be read: the database is damaged ({exc})"
            )
        return problems

    def event_id(self, session_id: str, text: str) -> str:
        """A journal event id: a keyed digest, so ids reveal nothing of the content."""
        return "ev_" + self.fields.index(f"{session_id}\x00{text}")[:40]

    def keyed_digest(self, purpose: str, value: str) -> str:
        """A stable keyed digest (HMAC-SHA-256, hex) of ``value`` for ``purpose``, under the
        store's lookup-index key: names that reveal nothing without the key (MCP pins).
        It survives key rotation."""
        return self.fields.index(f"ketch/keyed-digest/{purpose}\x00{value}")

    # --- forking -----------------------------------------------------------------------------

    def fork_session(self, source_id: str) -> str:
        """A new session with ``source_id``'s history up to its last finished turn, written
        by this process (its entries re-sealed and chained as the new session's own)."""
        source_id = self.resolve_id(source_id)
        header = self._header(source_id)
        with self.lock, reading(f"session {source_id}"):
            ops = self.conn.execute(
                "SELECT call_key, status, dispatched_seq, finished_seq, updated FROM operations WHERE session_id = ?",
                (source_id,),
            ).fetchall()
        workspace, name, title = header["workspace"], header["name"], header["title"]
        tokens = list(header["usage"].values())
        rows = self._rows(source_id)
        entries = self.entries(source_id)  # checked: a fork never launders a broken history
        # Up to the last finished turn: what comes after is the other writer's turn in progress.
        ends = [i for i, (_, kind, _, _) in enumerate(entries) if kind == "turn_end"]
        cut = ends[-1] + 1 if ends else 0
        rows, entries = rows[:cut], entries[:cut]
        fork = new_id("ses_")
        self.claim_now(fork)
        now = time.time()
        call_ids: dict[str, str] = {}
        for _, kind, _, plain in entries:
            if kind in ("tool_started", "tool_result"):
                call = json.loads(plain).get("tool_call_id")
                if isinstance(call, str):
                    call_ids[self.call_key(source_id, call)] = call
        with self.transaction(durable=True) as conn:
            conn.execute(
                "INSERT INTO sessions (id, workspace_index, workspace, name, title, provider, model, mode, created, updated, "
                "input_tokens, output_tokens, cached_tokens, reasoning_tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    fork,
                    self.fields.index(workspace),
                    self.fields.seal_text("sessions", "workspace", fork, workspace),
                    self.fields.seal_text("sessions", "name", fork, name) if name else None,
                    self.fields.seal_text("sessions", "title", fork, title) if title else None,
                    header["provider"],
                    header["model"],
                    header["mode"],
                    now,
                    now,
                    *tokens,
                ),
            )
            seqs: dict[int, int] = {}
            for source, (seq, kind, ts, plain) in zip(rows, entries, strict=True):
                new_seq = self._append_in(
                    conn,
                    fork,
                    kind,
                    plain,
                    event_id=self.event_id(fork, f"fork\x00{source.event_id}"),
                    ts=ts,
                    messages=int(kind == "message"),
                )
                seqs[seq] = int(new_seq or 0)
            self._append_in(
                conn,
                fork,
                "fork",
                dumps({"from": source_id, "entries": len(entries)}),
                event_id=self.event_id(fork, new_id()),
                ts=now,
            )
            for key, status, dispatched, finished, updated in ops:
                call = call_ids.get(key)
                if call is None:
                    continue
                conn.execute(
                    "INSERT INTO operations (session_id, call_key, status, owner, dispatched_seq, finished_seq, updated) VALUES (?, ?, ?, '', ?, ?, ?)",
                    (
                        fork,
                        self.call_key(fork, call),
                        "unknown_outcome" if status == "dispatched" else status,
                        seqs.get(dispatched),
                        seqs.get(finished),
                        updated,
                    ),
                )
            from ketch_store import blobs

            blobs.copy_session(conn, self.fields, source_id, fork)  # its checkpoints come along
        return fork

    # --- operations -------------------------------------------------------------------------------

    def call_key(self, session_id: str, tool_call_id: str) -> str:
        return self.fields.index(f"call\x00{session_id}\x00{tool_call_id}")[:40]

    def owner_id(self) -> str:
        if self._owner is None:
            self._owner = owners.OwnerLock(self.owners_dir)
            atexit.register(self._release_owner)  # a clean exit leaves no lock file behind
        return self._owner.id

    def operation_statuses(self, session_id: str) -> dict[str, str]:
        with self.lock, reading(f"session {session_id}"):
            rows = self.conn.execute(
                "SELECT call_key, status FROM operations WHERE session_id = ?", (session_id,)
            ).fetchall()
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
            held = self.writers.holds(session_id)
            if not self.writers.try_claim(session_id):
                continue  # a live ketch writes this session now: it is that one's to recover
            dead_owners.add(owner)
            now = time.time()

            def mark(
                conn: sqlite3.Connection,
                seq: int,
                sid: str = session_id,
                key: str = call_key,
                at: float = now,
            ) -> None:
                conn.execute(
                    "UPDATE operations SET status = 'unknown_outcome', finished_seq = ?, updated = ? "
                    "WHERE session_id = ? AND call_key = ? AND status = 'dispatched'",
                    (seq, at, sid, key),
                )

            try:
                self.append(
                    session_id,
                    "recovery",
                    {"dispatched_seq": dispatched_seq, "status": "unknown_outcome"},
                    event_id=self.event_id(
                        session_id, f"recovery\x00{call_key}\x00{dispatched_seq}"
                    ),
                    ts=now,
                    durable=True,
                    extra=mark,
                )
            finally:
                if not held:
                    self.writers.release(session_id)
            self.recovered.append((session_id, call_key))
        for owner in dead_owners:
            owners.forget(self.owners_dir, owner)
        self._sweep_owner_files()
        return self.recovered

    def _sweep_owner_files(self) -> None:
        if not self.owners_dir.is_dir():
            return
        with self.lock:
            busy = {
                row[0]
                for row in self.conn.execute(
                    "SELECT DISTINCT owner FROM operations WHERE status = 'dispatched'"
                )
            }
        for lock_file in self.owners_dir.glob("*.lock"):
            owner = lock_file.stem
            if owner not in busy and not owners.owner_alive(self.owners_dir, owner):
                owners.forget(self.owners_dir, owner)

    # --- the Store protocol -----------------------------------------------------------------------

    def latest_session_id(self, workspace: str) -> str | None:
        with self.lock, reading("the session list"):
            row = self.conn.execute(
                "SELECT id FROM sessions WHERE workspace_index = ? AND messages > 0 ORDER BY updated DESC LIMIT 1",
                (self.fields.index(workspace),),
            ).fetchone()
        return str(row[0]) if row else None

    def load_session(self, session_id: str) -> SessionRecord:
        """The kernel resumes through this: the session is then this process's to write
        (waiting for, or forking from, another writer: :meth:`claim_for_resume`)."""
        session_id = self.resolve_id(session_id)
        writing = self.claim_for_resume(session_id)
        try:
            return self.history(writing).record
        except BaseException:
            self.writers.release(writing)
            raise

    def read_session(self, session_id: str) -> SessionRecord:
        """The session's record, read without taking it over (commands that look)."""
        return self.history(session_id).record

    def append_event(self, session_id: str, event: Any) -> int | None:
        """Journal one event for a stored session (a command's rewind of a session no
        live session of this process holds), as the recorder would have."""
        session_id = self.resolve_id(session_id)
        payload = dumps(event.model_dump(mode="json", exclude={"type", "ts"}))
        event_id = self.event_id(
            session_id, f"{event.type}\x00{event.ts!r}\x00" + payload.decode("utf-8", "replace")
        )
        return self.append(session_id, event.type, payload, event_id=event_id, ts=event.ts)

    def _header(self, session_id: str) -> dict[str, Any]:
        """A session's row, its sealed fields opened."""
        with self.lock, reading(f"session {session_id}"):
            row = self.conn.execute(
                "SELECT workspace, name, title, provider, model, mode, created, updated, input_tokens, output_tokens, "
                "cached_tokens, reasoning_tokens FROM sessions WHERE id = ?",
                (session_id,),
            ).fetchone()
        if row is None:
            raise KetchError(f"no session '{session_id}'")
        (
            workspace,
            name,
            title,
            provider,
            model,
            mode,
            created,
            updated,
            tin,
            tout,
            tcached,
            treason,
        ) = row
        text = self.fields.open_text
        return {
            "id": session_id,
            "workspace": text("sessions", "workspace", session_id, workspace),
            "name": text("sessions", "name", session_id, name),
            "title": text("sessions", "title", session_id, title),
            "provider": provider,
            "model": model,
            "mode": mode,
            "created": created,
            "updated": updated,
            "usage": {
                "input_tokens": tin,
                "output_tokens": tout,
                "cached_tokens": tcached,
                "reasoning_tokens": treason,
            },
        }

    def history(self, session_id: str) -> Any:
        """The record plus the operation history (:class:`ketch_store.record.Loaded`)."""
        from ketch_store.children import children
        from ketch_store.record import build

        session_id = self.resolve_id(session_id)
        header = self._header(session_id)
        with _gc_paused():  # thousands of small objects at once: collection would only slow it
            entries, statuses = self.entries(session_id), self.operation_statuses(session_id)
            loaded = build(header, entries, statuses, self.call_key)
            loaded.children = children(header, entries, statuses, self.call_key)
            return loaded

    def list_sessions(
        self, workspace: str | None = None, *, errors: list[str] | None = None
    ) -> list[SessionSummary]:
        """Sessions, newest first. With ``errors``, a record that fails authentication or
        sits on a damaged page is reported there and skipped; without, it raises."""
        # A row and a summary per session: the collector's full passes would walk them all
        # again and again (at 100,000 sessions, 1.7x the CPU per session of 1,000).
        with _gc_paused():
            return self._list_sessions(workspace, errors)

    def _list_sessions(
        self, workspace: str | None, errors: list[str] | None
    ) -> list[SessionSummary]:
        query = "SELECT id, workspace, name, title, model, mode, created, updated, messages FROM sessions WHERE messages > 0"
        params: tuple[Any, ...] = ()
        if workspace is not None:
            query += " AND workspace_index = ?"
            params = (self.fields.index(workspace),)
        try:
            with self.lock, reading("the session list"):
                rows = self.conn.execute(query + " ORDER BY updated DESC", params).fetchall()
        except DamagedSession:
            if errors is None:
                raise
            rows = self._rows_one_by_one(query, params, errors)
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
                errors.append(f"session {sid}: integrity error: {exc}")
        return found

    def _rows_one_by_one(self, query: str, params: tuple[Any, ...], errors: list[str]) -> list[Any]:
        """The list from a damaged sessions table: every id the index still has, each row
        read on its own, the unreadable ones named."""
        rows: list[Any] = []
        for sid in self.session_ids():
            try:
                with self.lock:
                    row = self.conn.execute(
                        query.replace("WHERE messages > 0", "WHERE 1") + " AND id = ?",
                        (*params, sid),
                    ).fetchone()
            except sqlite3.DatabaseError as exc:
                errors.append(
                    f"session {sid}: its record sits on a damaged page of sessions.db ({exc})"
                )
                continue
            if row is None and workspace_filter_absent(params):
                errors.append(
                    f"session {sid}: its record sits on a damaged page of sessions.db (the index has it, the table does not)"
                )
            elif row is not None and row[8] > 0:
                rows.append(row)
        return sorted(rows, key=lambda r: r[7], reverse=True)

    def delete_session(self, session_id: str) -> None:
        session_id = self.resolve_id(session_id)
        held = self.writers.holds(session_id)
        if not held and not self.writers.try_claim(session_id):
            raise KetchError(
                f"session {session_id} is open in another ketch ({self.writers.holder(session_id)}); close it first"
            )
        from ketch_store import blobs

        with self.transaction() as conn:
            conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            conn.execute("DELETE FROM journal WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM operations WHERE session_id = ?", (session_id,))
            blobs.forget_session(conn, session_id)
        self.writers.forget(session_id)
        self.blobs.collect_garbage(grace=blobs.DELETE_GRACE_SECONDS)

    def rename_session(self, session_id: str, name: str) -> None:
        session_id = self.resolve_id(session_id)
        name = " ".join(name.split())
        value = self.fields.seal_text("sessions", "name", session_id, name) if name else None
        with self.transaction() as conn:
            conn.execute("UPDATE sessions SET name = ? WHERE id = ?", (value, session_id))

    def list_approvals(self, workspace: str) -> list[str]:
        index = self.fields.index(workspace)
        with self.lock, reading("the saved approvals"):
            rows = self.conn.execute(
                "SELECT scope_index, scope FROM approvals WHERE workspace_index = ? ORDER BY created",
                (index,),
            ).fetchall()
        return [
            self.fields.open_text("approvals", "scope", f"{index}/{key}", value)
            for key, value in rows
        ]

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
            return (
                conn.execute(
                    "DELETE FROM approvals WHERE workspace_index = ? AND scope_index = ?",
                    (index, key),
                ).rowcount
                > 0
            )

    def close(self) -> None:
        with self.lock:
            with contextlib.suppress(sqlite3.Error):
                self.conn.close()
            self.writers.release_all()
            self._release_owner()
            if self._users is not None:
                with contextlib.suppress(OSError):
                    os.close(self._users)
                self._users = None

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


def _opens_keycheck(fields: Fields, meta: dict[str, bytes]) -> bool:
    try:
        return fields.open("meta", "keycheck", "store", meta.get("keycheck", b"")) == KEY_CHECK
    except IntegrityError:
        return False


def _cause(exc: KetchError) -> str:
    text = exc.message
    return text[text.find("(") + 1 : text.find(")")] if "(" in text and ")" in text else text


def _stderr(message: str) -> None:
    import sys

    print(f"ketch: {message}", file=sys.stderr, flush=True)


def _rotation_notice() -> None:
    _stderr(
        "the session store is being re-keyed by another ketch (`ketch store key rotate`); waiting for it to finish"
    )
