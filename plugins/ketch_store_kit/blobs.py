"""Content-addressed, encrypted blobs in the session database (:class:`ketch_store_kit.protocols.BlobStore`).

Self-contained: its tables are created on first use (``CREATE TABLE IF NOT EXISTS``),
outside the journal's schema versions, and it touches no other table. The store offers
it as ``store.blobs``; workspace checkpoints are built on it.

* ``blobs``: one row per distinct content. ``id`` is a keyed digest of the content
  (HMAC-SHA-256 under the store's lookup-index key, over its SHA-256), so an id reveals
  nothing, not even whether two stores hold the same file. ``data`` is sealed with the
  field cipher, the id bound as associated data (``blobs/data/<id>``): a blob moved to
  another id fails to open, and the content read back must digest to its id again.
  Content is compressed (zlib) before sealing when that makes it smaller.
  ``children`` lists, in the clear, the ids a blob refers to (a tree: its files and
  subtrees), for garbage collection.
* ``blob_records``: per session and collection, numbered records of sealed JSON
  (``blob_records/data/<session>/<collection>/<seq>``) and, in ``blob_refs``, the blobs
  each refers to. A blob lives while a record reaches it through children; the rest is
  garbage, collected after a grace period (:data:`GRACE_SECONDS` since it was written or
  kept), so a writer in another process never loses a blob it is about to refer to.

What key rotation must re-encrypt: every ``blobs.data`` and ``blob_records.data`` (see
:func:`reseal`); ids, children and refs are digests under the lookup-index key, which
rotation carries over. :func:`copy_session` gives a forked session its own records.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
import zlib
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ketch.api import IntegrityError, KetchError
from ketch_store_kit.codec import Fields, dumps
from ketch_store_kit.protocols import BlobRecord, NewBlob

if TYPE_CHECKING:  # pragma: no cover
    from ketch_store_kit.journal import SqlJournal

GRACE_SECONDS = 3600.0
# After ``sessions delete``: long enough for another process's checkpoint in flight
# (milliseconds between its blobs and its record), short for the deleted content.
DELETE_GRACE_SECONDS = 120.0
ID_CHARS = 40  # 160 bits of a keyed digest: content addressing without collisions
RAW, ZLIB = b"r", b"z"
BATCH = 500  # ids per SQL statement (well under SQLite's variable limit)

SCHEMA = """
CREATE TABLE IF NOT EXISTS blobs (
    id TEXT PRIMARY KEY,
    used REAL NOT NULL,                 -- written or kept last: the grace period counts from here
    children BLOB,                      -- the ids it refers to, 20 raw bytes each (NULL: none)
    data BLOB NOT NULL                  -- sealed: a format byte, then the (compressed) content
);
CREATE TABLE IF NOT EXISTS blob_records (
    session_id TEXT NOT NULL,
    collection TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ts REAL NOT NULL,
    data BLOB NOT NULL,                 -- sealed JSON
    PRIMARY KEY (session_id, collection, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blob_refs (
    session_id TEXT NOT NULL,
    collection TEXT NOT NULL,
    seq INTEGER NOT NULL,
    blob_id TEXT NOT NULL,
    PRIMARY KEY (session_id, collection, seq, blob_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS blob_refs_by_blob ON blob_refs (blob_id);
"""


def _pack(ids: tuple[str, ...]) -> bytes | None:
    return b"".join(bytes.fromhex(i) for i in ids) if ids else None


def _unpack(packed: bytes | None) -> list[str]:
    raw = bytes(packed or b"")
    size = ID_CHARS // 2
    return [raw[i : i + size].hex() for i in range(0, len(raw), size)]


def _statements(script: str) -> list[str]:
    return [part.strip() for part in script.split(";") if part.strip()]


def _chunks(items: list[Any], size: int = BATCH) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _record_key(session_id: str, collection: str, seq: int) -> str:
    return f"{session_id}/{collection}/{seq}"


def ensure_schema(conn: Any) -> None:
    """Create the tables if they are missing (inside the caller's transaction). SQLite's
    only: a store on another database creates its own with the rest of its schema."""
    if not isinstance(conn, sqlite3.Connection):
        return
    for statement in _statements(SCHEMA):
        conn.execute(statement)


class Blobs:
    """The :class:`ketch_store_kit.protocols.BlobStore` over one :class:`SqlJournal`."""

    def __init__(self, store: SqlJournal) -> None:
        self.store = store
        with store.transaction() as conn:
            ensure_schema(conn)

    @property
    def fields(self) -> Fields:
        return self.store.fields  # read each time: a key rotation replaces it

    # --- blobs -------------------------------------------------------------------------

    def blob_id(self, data: bytes) -> str:
        return self.fields.index("ketch/blob\x00" + hashlib.sha256(data).hexdigest())[:ID_CHARS]

    def missing(self, ids: Iterable[str]) -> set[str]:
        wanted = list(dict.fromkeys(ids))
        found: set[str] = set()
        with self.store.lock:
            for chunk in _chunks(wanted):
                marks = ",".join("?" * len(chunk))
                found.update(
                    row[0]
                    for row in self.store.conn.execute(
                        f"SELECT id FROM blobs WHERE id IN ({marks})", chunk
                    )
                )
        return set(wanted) - found

    def _seal(self, blob: NewBlob) -> bytes:
        packed = zlib.compress(blob.data, 6)
        body = ZLIB + packed if len(packed) < len(blob.data) else RAW + blob.data
        return self.fields.seal("blobs", "data", blob.id, body)

    def put(self, blobs: Iterable[NewBlob]) -> int:
        items = list({b.id: b for b in blobs}.values())
        if not items:
            return 0
        now = time.time()
        absent = self.missing(b.id for b in items)
        # Sealed outside the write lock; what was there already is only marked as used.
        rows = [(b.id, now, _pack(b.children), self._seal(b)) for b in items if b.id in absent]
        insert = "INSERT INTO blobs (id, used, children, data) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"
        with self.store.transaction() as conn:
            conn.executemany(insert, rows)
            present = [b for b in items if b.id not in absent]
            for chunk in _chunks([b.id for b in present]):
                marks = ",".join("?" * len(chunk))
                conn.execute(f"UPDATE blobs SET used = ? WHERE id IN ({marks})", (now, *chunk))
            # Collected by another process since the check: write those too.
            gone = self._absent_in(conn, [b.id for b in present])
            late = [(b.id, now, _pack(b.children), self._seal(b)) for b in present if b.id in gone]
            conn.executemany(insert, late)
        return sum(len(row[3]) for row in rows + late)

    @staticmethod
    def _absent_in(conn: Any, ids: list[str]) -> set[str]:
        found: set[str] = set()
        for chunk in _chunks(ids):
            found.update(
                row[0]
                for row in conn.execute(
                    f"SELECT id FROM blobs WHERE id IN ({','.join('?' * len(chunk))})", chunk
                )
            )
        return set(ids) - found

    def get(self, blob_id: str) -> bytes:
        with self.store.lock:
            row = self.store.conn.execute(
                "SELECT data FROM blobs WHERE id = ?", (blob_id,)
            ).fetchone()
        if row is None:
            raise KetchError(
                f"blob {blob_id} is not in the session store (collected, or never written)"
            )
        body = self.fields.open("blobs", "data", blob_id, bytes(row[0]))
        data = zlib.decompress(body[1:]) if body[:1] == ZLIB else body[1:]
        if self.blob_id(data) != blob_id:
            raise IntegrityError(f"blob {blob_id}: its content does not match its id")
        return data

    def keep(self, ids: Iterable[str]) -> None:
        # A blob used within the grace period keeps everything it reaches alive.
        roots = list(dict.fromkeys(ids))
        now = time.time()
        with self.store.transaction() as conn:
            for chunk in _chunks(roots):
                conn.execute(
                    f"UPDATE blobs SET used = ? WHERE id IN ({','.join('?' * len(chunk))})",
                    (now, *chunk),
                )

    # --- records -----------------------------------------------------------------------

    def add_record(
        self, session_id: str, collection: str, data: dict[str, Any], refs: Iterable[str] = ()
    ) -> int:
        refs = list(dict.fromkeys(refs))
        now = time.time()
        with self.store.transaction() as conn:
            row = conn.execute(
                "SELECT coalesce(max(seq), 0) FROM blob_records WHERE session_id = ? AND collection = ?",
                (session_id, collection),
            ).fetchone()
            seq = int(row[0]) + 1
            sealed = self.fields.seal(
                "blob_records", "data", _record_key(session_id, collection, seq), dumps(data)
            )
            conn.execute(
                "INSERT INTO blob_records (session_id, collection, seq, ts, data) VALUES (?, ?, ?, ?, ?)",
                (session_id, collection, seq, now, sealed),
            )
            conn.executemany(
                "INSERT INTO blob_refs (session_id, collection, seq, blob_id) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [(session_id, collection, seq, ref) for ref in refs],
            )
            if refs:  # what a record refers to must exist now (and is kept from collection)
                marks = ",".join("?" * len(refs))
                count = conn.execute(
                    f"SELECT count(*) FROM blobs WHERE id IN ({marks})", refs
                ).fetchone()[0]
                if count != len(refs):
                    raise KetchError(
                        "a record refers to a blob that is not in the store; nothing was written"
                    )
        return seq

    def records(self, session_id: str, collection: str) -> list[BlobRecord]:
        with self.store.lock:
            rows = self.store.conn.execute(
                "SELECT seq, ts, data FROM blob_records WHERE session_id = ? AND collection = ? ORDER BY seq",
                (session_id, collection),
            ).fetchall()
        opened = self.fields.open
        return [
            BlobRecord(
                seq=seq,
                ts=ts,
                data=json.loads(
                    opened(
                        "blob_records",
                        "data",
                        _record_key(session_id, collection, seq),
                        bytes(data),
                    )
                ),
            )
            for seq, ts, data in rows
        ]

    def drop_records(self, session_id: str, collection: str, seqs: Iterable[int]) -> int:
        wanted = list(dict.fromkeys(int(s) for s in seqs))
        dropped = 0
        with self.store.transaction() as conn:
            for chunk in _chunks(wanted):
                marks = ",".join("?" * len(chunk))
                params = (session_id, collection, *chunk)
                conn.execute(
                    f"DELETE FROM blob_refs WHERE session_id = ? AND collection = ? AND seq IN ({marks})",
                    params,
                )
                dropped += conn.execute(
                    f"DELETE FROM blob_records WHERE session_id = ? AND collection = ? AND seq IN ({marks})",
                    params,
                ).rowcount
        return dropped

    # --- collection ----------------------------------------------------------------------

    def collect_garbage(self, *, grace: float = GRACE_SECONDS) -> dict[str, int]:
        """Mark what records refer to and what was used within ``grace`` seconds, follow
        their children, and delete the rest (one transaction)."""
        cutoff = time.time() - grace
        with self.store.transaction() as conn:
            live = {row[0] for row in conn.execute("SELECT DISTINCT blob_id FROM blob_refs")}
            live |= {
                row[0] for row in conn.execute("SELECT id FROM blobs WHERE used >= ?", (cutoff,))
            }
            frontier = list(live)
            while frontier:
                found: dict[str, None] = {}
                for chunk in _chunks(frontier):
                    marks = ",".join("?" * len(chunk))
                    query = (
                        f"SELECT children FROM blobs WHERE id IN ({marks}) AND children IS NOT NULL"
                    )
                    for (children,) in conn.execute(query, chunk):
                        found.update((c, None) for c in _unpack(children) if c not in live)
                live.update(found)
                frontier = list(found)
            dead = [row[0] for row in conn.execute("SELECT id FROM blobs") if row[0] not in live]
            size = 0
            for chunk in _chunks(dead):
                marks = ",".join("?" * len(chunk))
                size += conn.execute(
                    f"SELECT coalesce(sum(length(data)), 0) FROM blobs WHERE id IN ({marks})", chunk
                ).fetchone()[0]
                conn.execute(f"DELETE FROM blobs WHERE id IN ({marks})", chunk)
        return {"blobs": len(dead), "bytes": int(size)}

    def stats(self) -> dict[str, int]:
        """Counts and sizes, for benchmarks and ``--json`` reports."""
        with self.store.lock:
            conn = self.store.conn
            blobs, size = conn.execute(
                "SELECT count(*), coalesce(sum(length(data)), 0) FROM blobs"
            ).fetchone()
            records = conn.execute("SELECT count(*) FROM blob_records").fetchone()[0]
        return {"blobs": int(blobs), "bytes": int(size), "records": int(records)}

    def verify(self) -> list[str]:
        """Every blob and record opens under the current key (for ``sessions verify``)."""
        problems: list[str] = []
        with self.store.lock:
            blob_rows = self.store.conn.execute("SELECT id FROM blobs").fetchall()
            record_rows = self.store.conn.execute(
                "SELECT session_id, collection, seq, data FROM blob_records"
            ).fetchall()
        for (blob_id,) in blob_rows:
            try:
                self.get(blob_id)
            except (IntegrityError, KetchError, zlib.error) as exc:
                problems.append(f"blob {blob_id}: {exc}")
        problems += self._missing_referenced({row[0] for row in blob_rows})
        for session_id, collection, seq, data in record_rows:
            key = _record_key(session_id, collection, seq)
            try:
                self.fields.open("blob_records", "data", key, bytes(data))
            except IntegrityError:
                problems.append(f"record {key} does not open under the current key")
        return problems

    def _missing_referenced(self, present: set[str]) -> list[str]:
        """Blobs a record refers to, or a stored tree names as a child, that are gone
        (deleted outside ketch): undo and rewind to them would fail later."""
        with self.store.lock:
            refs = self.store.conn.execute(
                "SELECT session_id, collection, seq, blob_id FROM blob_refs ORDER BY session_id, seq"
            ).fetchall()
            trees = self.store.conn.execute(
                "SELECT id, children FROM blobs WHERE children IS NOT NULL"
            ).fetchall()
        problems: list[str] = []
        gone = [(s, c, q, b) for s, c, q, b in refs if b not in present]
        for session_id, collection, seq, blob_id in gone[:20]:
            problems.append(
                f"session {session_id}: {collection} record {seq} refers to blob {blob_id}, which is "
                "missing from the store (deleted outside ketch; undo and rewind to it will fail)"
            )
        if len(gone) > 20:
            problems.append(f"and {len(gone) - 20} more records refer to missing blobs")
        orphans = sorted({c for _, kids in trees for c in _unpack(kids) if c not in present})
        if orphans:
            problems.append(
                f"{len(orphans)} blob(s) named by a stored directory tree are missing "
                f"(first: {orphans[0]}; deleted outside ketch)"
            )
        return problems


def forget_session(conn: Any, session_id: str) -> None:
    """Drop a deleted session's records, inside the store's delete transaction (the
    store collects the blobs nothing else refers to right after)."""
    ensure_schema(conn)
    conn.execute("DELETE FROM blob_refs WHERE session_id = ?", (session_id,))
    conn.execute("DELETE FROM blob_records WHERE session_id = ?", (session_id,))


def reseal(conn: Any, old: Fields, new: Fields) -> dict[str, int]:
    """Re-encrypt every blob and record from ``old`` to ``new`` (key rotation), inside the
    caller's transaction. Ids and children stay: they use the lookup-index key, which a
    rotation carries over. Raises ``IntegrityError`` for a value ``old`` does not open."""
    try:
        ensure_schema(conn)
    except sqlite3.OperationalError:  # pragma: no cover - a read-only connection
        return {"blobs": 0, "records": 0}
    blobs = records = 0
    last = ""
    while True:  # in chunks: a large store must not be held in memory at once
        rows = conn.execute(
            "SELECT id, data FROM blobs WHERE id > ? ORDER BY id LIMIT ?", (last, BATCH)
        ).fetchall()
        if not rows:
            break
        for blob_id, data in rows:
            plain = old.open("blobs", "data", blob_id, bytes(data))
            conn.execute(
                "UPDATE blobs SET data = ? WHERE id = ?",
                (new.seal("blobs", "data", blob_id, plain), blob_id),
            )
            blobs += 1
        last = rows[-1][0]
    for session_id, collection, seq, data in conn.execute(
        "SELECT session_id, collection, seq, data FROM blob_records"
    ).fetchall():
        key = _record_key(session_id, collection, seq)
        plain = old.open("blob_records", "data", key, bytes(data))
        conn.execute(
            "UPDATE blob_records SET data = ? WHERE session_id = ? AND collection = ? AND seq = ?",
            (new.seal("blob_records", "data", key, plain), session_id, collection, seq),
        )
        records += 1
    return {"blobs": blobs, "records": records}


def copy_session(conn: Any, fields: Fields, source_id: str, fork_id: str) -> int:
    """Give a forked session copies of ``source_id``'s records (re-sealed under the fork's
    identity), inside the caller's transaction. Blobs are shared, not copied."""
    ensure_schema(conn)
    rows = conn.execute(
        "SELECT collection, seq, ts, data FROM blob_records WHERE session_id = ?", (source_id,)
    ).fetchall()
    for collection, seq, ts, data in rows:
        plain = fields.open(
            "blob_records", "data", _record_key(source_id, collection, seq), bytes(data)
        )
        conn.execute(
            "INSERT INTO blob_records (session_id, collection, seq, ts, data) VALUES (?, ?, ?, ?, ?)",
            (
                fork_id,
                collection,
                seq,
                ts,
                fields.seal("blob_records", "data", _record_key(fork_id, collection, seq), plain),
            ),
        )
    conn.execute(
        "INSERT INTO blob_refs (session_id, collection, seq, blob_id) SELECT ?, collection, seq, blob_id FROM blob_refs WHERE session_id = ? ON CONFLICT DO NOTHING",
        (fork_id, source_id),
    )
    return len(rows)
