"""The PostgreSQL session store: a team's sessions on one server, sealed on the client.

Everything the journal does is :class:`ketch_store_kit.journal.SqlJournal`'s (the same
code the SQLite store runs); this module adds what a server shared by several machines
needs:

* **the team key**: the data key is the team's, wrapped to each member's public key
  (``members``); opening unwraps this machine's copy with its identity
  (:mod:`ketch_crypto.team`, through ``cipher.team``). A machine that is not a member
  is refused with what to do;
* **leases** instead of lock files (:mod:`ketch_store_pg.leases`): one writer per
  session across machines, renewed by a heartbeat, fenced inside every append;
* **the key epoch**: every write transaction holds an advisory lock shared and checks
  the ``epoch``; a key rotation holds the lock exclusively and changes the epoch, so no
  process keeps writing under a key that was rotated away;
* **reconnecting**: a dropped connection or a server restart is retried (appends are
  idempotent by their event id) for ``reconnect_wait`` seconds.

Sequence numbers and chain links are allocated in the append's transaction: the
``UPDATE`` of the session row takes its row lock, so two appends to one session (there
should be one writer, and the fence makes sure) are serialized, never interleaved.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from ketch.api import FieldCipher, IntegrityError, KetchError, StoreUnavailable
from ketch_store_kit.codec import Fields
from ketch_store_kit.journal import KEY_CHECK, WRITER_WAIT, SqlJournal, opens_keycheck
from ketch_store_pg import schema
from ketch_store_pg.connection import PgConnection, Target, conflict, lost, message, parse_url
from ketch_store_pg.leases import LEASE_SECONDS, Leases

T = TypeVar("T")
TEAM_LABEL = b"ketch/team/"
EPOCH_LOCK = 7301454  # the advisory lock a rotation holds exclusively


def _stderr(text: str) -> None:
    import sys

    print(f"ketch: {text}", file=sys.stderr, flush=True)


def _context(store_id: str, fingerprint: str) -> bytes:
    return TEAM_LABEL + store_id.encode() + b"/" + fingerprint.encode()


def _meta(conn: Any) -> dict[str, bytes]:
    return {str(k): bytes(v) for k, v in conn.execute("SELECT key, value FROM meta").fetchall()}


class PgStore(SqlJournal):
    """A :class:`ketch.storage.Store` on PostgreSQL; see the module docstring."""

    damage_hint = "`ketch sessions verify --all` reports what is readable"

    def __init__(
        self, target: Target, pg: PgConnection, fields: Fields, meta: dict[str, bytes], lease: float
    ) -> None:
        import pg8000

        self.target = target
        self.path = target.shown  # what messages name (never the password)
        self.where = f"the PostgreSQL store {target.shown}"
        self.pg = pg
        self.conn = pg
        self.fields = fields
        self.driver_errors = (pg8000.Error, OSError)
        self.lock = threading.RLock()
        self.writers = Leases(self, lease)
        self.writer_wait = WRITER_WAIT
        self.recovered: list[tuple[str, str]] = []
        self.notices: list[str] = []
        self.say: Callable[[str], None] = _stderr
        self.recorder: Any = None
        self.store_id = meta["store_id"].decode()
        self.epoch = meta["epoch"]
        self._in_retry = threading.local()
        self.team: Any = None  # this member's identity (``cipher.team``)
        self.cipher_for: Callable[[bytes], Any] = lambda key: None
        pg.notice = self.say

    # --- opening --------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        url: str,
        cipher: FieldCipher | None,
        *,
        lease: float = LEASE_SECONDS,
        reconnect_wait: float | None = None,
        member_name: str | None = None,
    ) -> PgStore:
        target = parse_url(url)
        team = getattr(cipher, "team", None)
        if cipher is None or team is None or not callable(getattr(cipher, "for_key", None)):
            raise StoreUnavailable(
                f"the PostgreSQL session store {target.shown} is always encrypted with a team key, and no "
                "encryption plugin with team keys is loaded (enable the 'crypto' plugin)",
                exists=True,
            )
        try:
            pg = PgConnection(
                target, **({} if reconnect_wait is None else {"reconnect_wait": reconnect_wait})
            )
        except Exception as exc:  # noqa: BLE001 - every way a connection fails
            raise StoreUnavailable(
                f"cannot reach the PostgreSQL session store {target.shown}: {message(exc)}. Check [storage] url "
                "(or KETCH_STORE_URL) and that the server is up; --no-save runs without saving",
                exists=True,
            ) from None
        try:
            schema.create(pg)
            fields, meta = cls._team_fields(pg, target, cipher, team, member_name)
        except StoreUnavailable:
            pg.close()
            raise
        except KetchError as exc:
            pg.close()
            raise StoreUnavailable(exc.message, exists=True) from None
        except Exception as exc:
            pg.close()
            if lost(exc):
                raise StoreUnavailable(
                    f"the PostgreSQL session store {target.shown} went away while opening: {message(exc)}",
                    exists=True,
                ) from None
            raise
        store = cls(target, pg, fields, meta, lease)
        store.team, store.cipher_for = team, cipher.for_key  # type: ignore[attr-defined]
        try:
            store.recover()
        except KetchError as exc:
            store.notices.append(f"the crash-recovery pass could not finish ({exc.message})")
        return store

    @classmethod
    def _team_fields(
        cls, pg: PgConnection, target: Target, cipher: Any, team: Any, member_name: str | None
    ) -> tuple[Fields, dict[str, bytes]]:
        public = team.public_key(create=True)
        mine = team.fingerprint(public)
        meta = _meta(pg)
        if "keycheck" not in meta:
            with pg.transaction():
                pg.execute("SELECT pg_advisory_xact_lock(7301453)")
                meta = _meta(pg)
                if "keycheck" not in meta:
                    return cls._create(pg, cipher, team, public, mine, member_name)
        row = pg.execute("SELECT wrapped FROM members WHERE fingerprint = ?", (mine,)).fetchone()
        if row is None:
            raise StoreUnavailable(
                f"this machine is not a member of the team session store {target.shown}. Give your public key to a "
                f"member, who runs `ketch store key members add NAME KEY`:\n  {public}",
                exists=True,
            )
        store_id = meta["store_id"].decode()
        try:
            key = team.unwrap(bytes(row[0]), _context(store_id, mine))
        except IntegrityError as exc:
            raise StoreUnavailable(f"{target.shown}: {exc}", exists=True) from None
        fields = Fields(cipher.for_key(key))
        if not opens_keycheck(fields, meta):
            raise StoreUnavailable(
                f"the team key wrapped for you does not open {target.shown} (the key check fails): a member "
                "should remove and add you again",
                exists=True,
            )
        fields.cipher.set_index_key(fields.open("meta", "index_key", "store", meta["index_key"]))  # type: ignore[attr-defined]
        return fields, meta

    @classmethod
    def _create(
        cls,
        pg: PgConnection,
        cipher: Any,
        team: Any,
        public: str,
        mine: str,
        member_name: str | None,
    ) -> tuple[Fields, dict[str, bytes]]:
        """A new team store (inside the caller's transaction): its key, wrapped to its first member."""
        key = team.mint()
        fields = Fields(cipher.for_key(key))
        store_id = os.urandom(12).hex()
        meta = {
            "encryption": b"on",
            "algorithm": str(fields.cipher.algorithm).encode(),
            "schema": str(schema.SCHEMA_VERSION).encode(),
            "keycheck": fields.seal("meta", "keycheck", "store", KEY_CHECK),
            "index_key": fields.seal("meta", "index_key", "store", fields.cipher.index_key()),  # type: ignore[attr-defined]
            "store_id": store_id.encode(),
            "epoch": os.urandom(8).hex().encode(),
            "created": str(time.time()).encode(),
            "bound": b"1",
        }
        for name, value in meta.items():
            pg.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (name, value))
        name = member_name or default_member_name()
        pg.execute(
            "INSERT INTO members (fingerprint, public_key, name, wrapped, added) VALUES (?, ?, ?, ?, ?)",
            (
                mine,
                public,
                fields.seal_text("members", "name", mine, name),
                team.wrap(key, public, _context(store_id, mine)),
                time.time(),
            ),
        )
        return fields, meta

    # --- transactions, reads, retries -------------------------------------------------------

    def run(self, work: Callable[[PgConnection], T], what: str, *, retry: bool = True) -> T:
        """``work(conn)`` under the store's lock, retried across a lost connection."""
        with self.lock:
            if not retry:
                return work(self.pg)
            return self.pg.retrying(lambda: work(self.pg), what)

    def retried(self, work: Callable[[], T], what: str) -> T:
        """A whole store operation (its reads and its transaction), run again after a lost
        connection: idempotent by construction (event ids, ``ON CONFLICT``)."""
        depth = getattr(self._in_retry, "depth", 0)
        if depth:
            return work()
        self._in_retry.depth = 1
        try:
            with self.lock:
                return self.pg.retrying(work, what)
        finally:
            self._in_retry.depth = 0

    def _raw_errors(self) -> bool:
        return bool(getattr(self._in_retry, "depth", 0))

    @contextlib.contextmanager
    def reading(self, what: str) -> Iterator[None]:
        try:
            yield
        except KetchError:
            raise
        except Exception as exc:
            if self._raw_errors() and (lost(exc) or conflict(exc)):
                raise
            if lost(exc):
                raise KetchError(
                    f"the PostgreSQL session store {self.target.shown} is unreachable while reading {what}: {message(exc)}"
                ) from None
            if isinstance(exc, self.driver_errors):
                raise KetchError(
                    f"the PostgreSQL session store failed reading {what}: {message(exc)}"
                ) from None
            raise

    @contextlib.contextmanager
    def transaction(self, *, durable: bool = False) -> Iterator[PgConnection]:
        with self.lock, self.reading("a write"), self.pg.transaction():
            # Shared with every other write, exclusive to a rotation (an advisory lock: no
            # row lock on one hot row for every append of the whole team).
            row = self.pg.execute(
                f"SELECT value, pg_advisory_xact_lock_shared({EPOCH_LOCK}) IS NULL FROM meta WHERE key = 'epoch'"
            ).fetchone()
            if row is None or bytes(row[0]) != self.epoch:
                raise KetchError(
                    "the team key of this session store was rotated by another member while this ketch ran; "
                    "nothing was written: run again to go on under the new key"
                )
            yield self.pg

    # --- the journal: the write path, retried across a server restart ------------------------

    def append(self, session_id: str, kind: str, data: Any, **kwargs: Any) -> int | None:
        return self.retried(
            lambda: SqlJournal.append(self, session_id, kind, data, **kwargs), "journaling"
        )

    def ensure_session(self, session_id: str, **kwargs: Any) -> None:
        self.retried(
            lambda: SqlJournal.ensure_session(self, session_id, **kwargs), "recording a session"
        )

    def update_session(self, session_id: str, **columns: Any) -> None:
        self.retried(
            lambda: SqlJournal.update_session(self, session_id, **columns), "recording a session"
        )

    def set_title(self, session_id: str, text: str) -> None:
        self.retried(lambda: SqlJournal.set_title(self, session_id, text), "recording a title")

    def has_session(self, session_id: str) -> bool:
        return self.retried(lambda: SqlJournal.has_session(self, session_id), "reading a session")

    def message_count(self, session_id: str) -> int:
        return self.retried(lambda: SqlJournal.message_count(self, session_id), "reading a session")

    def latest_session_id(self, workspace: str) -> str | None:
        return self.retried(
            lambda: SqlJournal.latest_session_id(self, workspace), "finding the latest session"
        )

    def history(self, session_id: str) -> Any:
        return self.retried(lambda: SqlJournal.history(self, session_id), "loading a session")

    # --- leases and owners --------------------------------------------------------------------

    def _fence(self, conn: Any, session_id: str) -> None:
        self.writers.fence(conn, session_id)

    def owner_id(self) -> str:
        return self.writers.register_owner()

    def _owner_alive(self, owner: str) -> bool:
        return self.writers.owner_alive(owner)

    def _forget_owner(self, owner: str) -> None:
        self.writers.forget_owner(owner)

    def verify_store(self) -> list[str]:
        """The store-wide records: the key check, the index key, approvals, members, blobs."""
        problems: list[str] = []
        with self.lock, self.reading("the store's own records"):
            meta = _meta(self.pg)
            if not opens_keycheck(self.fields, meta):
                problems.append("the key check does not authenticate")
            if not self.fields.opens("meta", "index_key", "store", meta.get("index_key", b"")):
                problems.append("the sealed lookup-index key does not authenticate")
            rows = self.pg.execute(
                "SELECT workspace_index, scope_index, scope FROM approvals"
            ).fetchall()
            members = self.pg.execute("SELECT fingerprint, name FROM members").fetchall()
        bad = sum(
            1
            for index, key, value in rows
            if not self.fields.opens("approvals", "scope", f"{index}/{key}", bytes(value))
        )
        if bad:
            problems.append(f"{bad} saved approval(s) do not authenticate")
        for fingerprint, name in members:
            if not self.fields.opens("members", "name", fingerprint, bytes(name)):
                problems.append(f"member {fingerprint}: its name does not authenticate")
        problems += self.blobs.verify()
        return problems

    # --- the team (``ketch store key members|rotate``) ------------------------------------------

    def members(self) -> list[dict[str, Any]]:
        from ketch_store_pg import team

        return team.members(self)

    def add_member(self, name: str, public_key: str) -> str:
        from ketch_store_pg import team

        return team.add(self, name, public_key)

    def remove_member(self, who: str) -> dict[str, Any]:
        from ketch_store_pg import team

        return team.remove(self, who)

    def rotate_key(self) -> dict[str, Any]:
        from ketch_store_pg import team

        return team.rotate(self)

    def close(self) -> None:
        with self.lock:
            self.writers.stop()
            self.pg.close()


def default_member_name() -> str:
    import getpass

    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001
        user = "someone"
    return f"{user}@{socket.gethostname()}"
