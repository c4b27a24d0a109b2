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
inserts the sealed entry with its chain link (:mod:`ketch_store_kit.chain`), moves the
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
import errno
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ketch.api import FieldCipher, IntegrityError, KetchError, StoreUnavailable
from ketch_store import owners
from ketch_store.schema import (
    SCHEMA_VERSION,
    SchemaTooNew,
    lift_triggers,
    migrate,
    restore_triggers,
)
from ketch_store.writers import Writers
from ketch_store_kit.binding import binding_of
from ketch_store_kit.chain import CHAIN, HEAD, head_input, link_input
from ketch_store_kit.codec import Fields, PlainCodec
from ketch_store_kit.journal import (
    KEY_CHECK,
    WRITER_WAIT,
    DamagedSession,
    SqlJournal,
    gc_paused,
    opens_keycheck,
    writer_wait,
)

BUSY_TIMEOUT_MS = 10_000
ROTATION_WAIT = 120.0  # seconds an open waits for a key rotation in another process

DAMAGE_HINT = "`ketch sessions verify --all` names the damaged sessions; the others can still be listed and exported"
__all__ = ["KEY_CHECK", "DamagedSession", "SqliteStore", "gc_paused", "writer_wait"]


class KeyDoesNotOpen(StoreUnavailable, IntegrityError):
    """The key the provider holds is not the one the database was written under."""


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


def workspace_filter_absent(params: tuple[Any, ...]) -> bool:
    return not params


def _remove_if_empty(path: Path) -> None:
    with contextlib.suppress(OSError):
        if path.stat().st_size == 0:
            path.unlink()
            for suffix in ("-wal", "-shm", "-journal"):
                path.with_name(path.name + suffix).unlink(missing_ok=True)


def _refuse_empty_beside_key(path: Path, cipher: FieldCipher) -> None:
    """An empty (truncated) database whose key file is beside it: the sessions that key
    protects are gone from the file. Never build a fresh store over that key silently."""
    beside = getattr(cipher, "key_file_beside", None)
    key_file = beside() if callable(beside) else None
    if key_file is None:
        return
    size = path.stat().st_size if path.exists() else 0
    raise StoreUnavailable(
        f"{path} is empty ({size} bytes, no sessions in it) but its key {key_file} is beside it: the "
        "store that key belongs to was truncated or replaced. Restore sessions.db from a backup; to start "
        f"a new store instead, move both {path.name} and {key_file.name} away (ketch will not make a new "
        "store over an old key by itself)",
        exists=True,
    )


def full(exc: sqlite3.Error, path: Path) -> bool:
    """The disk holding the store is full, not the database damaged: SQLITE_FULL, or an
    I/O error (a -wal/-shm that cannot grow) on a filesystem with no space left."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code == sqlite3.SQLITE_FULL or "disk is full" in str(exc):
        return True
    if code is not None and code & 0xFF != sqlite3.SQLITE_IOERR:
        return False
    return no_space(path)


def no_space(path: Path) -> bool:
    """Less than a few pages free for an unprivileged writer where ``path`` lives."""
    try:
        stats = os.statvfs(path.parent if not path.is_dir() else path)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < 64 * 1024


def disk_full(path: Path, exc: BaseException) -> str:
    return (
        f"the disk holding the session store is full ({exc}; {path.parent}). The store itself is not "
        "damaged: free some space there and run again; do not move sessions.db away"
    )


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


class SqliteStore(SqlJournal):
    """Implements :class:`ketch.storage.Store`, plus the journal the recorder writes."""

    where = "sessions.db"
    damage_hint = DAMAGE_HINT
    driver_errors = (sqlite3.DatabaseError,)

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
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise StoreUnavailable(disk_full(path, exc), exists=exists) from None
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
        existed = path.exists()
        fresh = not existed or path.stat().st_size == 0
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
            return cls._open_checked(path, conn, cipher, fresh, existed)
        except BaseException:
            conn.close()
            if fresh and not existed:
                _remove_if_empty(path)  # a store that never opened leaves nothing behind
            raise

    @classmethod
    def _open_checked(
        cls,
        path: Path,
        conn: sqlite3.Connection,
        cipher: FieldCipher | None,
        fresh: bool,
        existed: bool,
    ) -> SqliteStore:
        try:
            return cls._open_locked(path, conn, cipher, fresh, existed)
        except sqlite3.DatabaseError as exc:
            if full(exc, path):
                raise StoreUnavailable(disk_full(path, exc), exists=not fresh) from None
            raise StoreUnavailable(
                f"cannot open the session store {path}: {exc}. If it is damaged beyond what ketch can read, move it away "
                "(or restore a backup) and run again; `ketch sessions verify --all` reports what is readable",
                exists=not fresh,
            ) from None

    @classmethod
    def _open_locked(
        cls,
        path: Path,
        conn: sqlite3.Connection,
        cipher: FieldCipher | None,
        fresh: bool,
        existed: bool = False,
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
        if fresh and existed and fields.encrypted:
            _refuse_empty_beside_key(path, codec)
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
                    ("bound", b"1"),
                ]
                conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", rows)
        store = cls(path, conn, fields)
        store._settle_keys(fresh)
        # A damaged page somewhere must not keep every session closed: these passes skip it.
        for step, what in (
            (store._chain_unlinked, "chaining older journal entries"),
            (store._bind_unbound, "binding older sessions' provider and model"),
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
        if opens_keycheck(fields, meta):
            if manager is not None and meta.get("rotating") == b"1":
                finish_interrupted(
                    conn, fields, None
                )  # died before its commit: the staged key is unused
            return fields
        staged = manager.pending() if manager is not None and meta.get("rotating") == b"1" else None
        if staged is not None:
            candidate = Fields(fields.cipher.with_key(staged))  # type: ignore[attr-defined]
            if opens_keycheck(candidate, meta):
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

    def _bind_unbound(self) -> None:
        """Bind the provider, model, mode and workspace of sessions written before
        schema 3 (once: afterwards a missing binding is a finding, not a migration)."""
        if _meta(self.conn).get("bound") == b"1":
            return
        with self.transaction() as conn:
            rows = conn.execute(
                "SELECT id, provider, model, mode, workspace_index FROM sessions WHERE binding IS NULL"
            ).fetchall()
            for session_id, *columns in rows:
                conn.execute(
                    "UPDATE sessions SET binding = ? WHERE id = ?",
                    (binding_of(self.fields, session_id, tuple(columns)), session_id),
                )
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('bound', ?)", (b"1",))

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
                if full(exc, self.path):
                    raise KetchError(disk_full(self.path, exc)) from None
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

    def verify_store(self) -> list[str]:
        """Problems with the store-wide records: the file itself, the key check, the index key, approvals."""
        problems: list[str] = []
        damage = self.damage()
        if damage:
            problems.append(f"sessions.db is damaged (SQLite: {damage})")
        try:
            meta = _meta(self.conn)
            if self.encrypted and not opens_keycheck(self.fields, meta):
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

    def owner_id(self) -> str:
        if self._owner is None:
            self._owner = owners.OwnerLock(self.owners_dir)
            atexit.register(self._release_owner)  # a clean exit leaves no lock file behind
        return self._owner.id

    def reading(self, what: str) -> contextlib.AbstractContextManager[None]:
        return reading(what)

    def _owner_alive(self, owner: str) -> bool:
        return owners.owner_alive(self.owners_dir, owner)

    def _forget_owner(self, owner: str) -> None:
        owners.forget(self.owners_dir, owner)

    def _after_recover(self) -> None:
        self._sweep_owner_files()

    def _list_fallback(self, query: str, params: tuple[Any, ...], errors: list[str]) -> list[Any]:
        return self._rows_one_by_one(query, params, errors)

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


def _stderr(message: str) -> None:
    import sys

    print(f"ketch: {message}", file=sys.stderr, flush=True)


def _rotation_notice() -> None:
    _stderr(
        "the session store is being re-keyed by another ketch (`ketch store key rotate`); waiting for it to finish"
    )
