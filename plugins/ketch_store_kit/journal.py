"""The store logic written once, in the SQL SQLite and PostgreSQL both speak.

:class:`SqlJournal` is a :class:`ketch.storage.Store` over any connection whose
``execute(sql, params)`` takes ``?`` placeholders and returns a cursor
(``fetchone``, ``fetchall``, ``rowcount``, iteration): ``sqlite3`` as it is, and the
PostgreSQL store's adapter. A concrete store supplies how a transaction is opened
(:meth:`SqlJournal.transaction`), its writer locks (``writers``: ``try_claim``,
``claim``, ``holder``, ``holds``, ``release``, ``release_all``, ``forget``), how it
tells whether the process that dispatched an operation is alive, and how it reports
errors of its driver; everything else (journal appends with their chain, loading and
checking a session, verification, forks, approvals, crash recovery) is here once.

Writes: :meth:`SqlJournal.append` is one transaction that skips an event id already
journaled, allocates the session's next sequence number (the ``UPDATE`` of the
session row serializes writers of one session in both databases), inserts the sealed
entry with its chain link, moves the session's head, and applies the entry's side
effects. Only the holder of a session's writer lock appends to it.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from ketch.api import FieldCipher, IntegrityError, KetchError, SessionRecord, SessionSummary, new_id
from ketch_store_kit.binding import binding_of, rebind
from ketch_store_kit.chain import CHAIN, HEAD, Report, Row, check, head_input, link_input
from ketch_store_kit.codec import Fields, dumps

KEY_CHECK = b"ketch key check v1"
TITLE_CHARS = 80
WRITER_WAIT = 60.0  # seconds a second writer waits for a session before forking it

Extra = Callable[[Any, int], None]


def writer_wait(settings: Any) -> float:
    """``[storage] writer_wait``: seconds to wait for another writer of a session (then fork)."""
    from ketch.api import ConfigError

    value = settings.section("storage").get("writer_wait", WRITER_WAIT)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigError(
            f"[storage] writer_wait = {value!r} is not a number of seconds (0 or more) in config.toml"
        )
    return float(value)


def claim_waiting(
    writers: Any,
    session_id: str,
    wait: float,
    on_wait: Callable[[str], None] | None,
    poll: float,
) -> bool:
    """``writers.try_claim(session_id)``, retried every ``poll`` seconds for up to ``wait``
    seconds; ``on_wait(holder)`` once if the first try finds it taken (either store's
    writer locks: lock files or leases)."""
    if writers.try_claim(session_id):
        return True
    if on_wait is not None:
        on_wait(writers.holder(session_id))
    deadline = time.monotonic() + max(wait, 0.0)
    while time.monotonic() < deadline:
        time.sleep(poll)
        if writers.try_claim(session_id):
            return True
    return False


STORE_URL_ENV = "KETCH_STORE_URL"


def store_url(settings: Any, environ: Any = None) -> str | None:
    """Where sessions go instead of the SQLite file: ``KETCH_STORE_URL``, else
    ``[storage] url``; None for the default (the SQLite file in the state dir)."""
    import os

    env = os.environ if environ is None else environ
    url = env.get(STORE_URL_ENV) or settings.section("storage").get("url") or ""
    url = str(url).strip()
    return url or None


class DamagedSession(KetchError):
    """Part of the database is damaged (``database disk image is malformed``)."""


class SqlJournal:
    """Implements :class:`ketch.storage.Store` and the journal the recorder writes."""

    where = "the session store"  # how messages name the database
    path: Any  # what messages and commands name the store by (a file, or a URL without password)
    damage_hint = "`ketch sessions verify --all` names the damaged sessions"
    driver_errors: tuple[type[BaseException], ...] = ()  # what a failed read raises
    conn: Any
    fields: Fields
    lock: Any
    writers: Any
    writer_wait: float
    notices: list[str]
    say: Callable[[str], None]
    recovered: list[tuple[str, str]]

    # --- what a concrete store supplies ------------------------------------------------

    def transaction(self, *, durable: bool = False) -> contextlib.AbstractContextManager[Any]:
        """A write transaction; yields the connection."""
        raise NotImplementedError

    def reading(self, what: str) -> contextlib.AbstractContextManager[None]:
        """Driver errors met while reading ``what``, as one-line errors."""
        return contextlib.nullcontext()

    def owner_id(self) -> str:
        """This process's id as the owner of operations it dispatches."""
        raise NotImplementedError

    def _owner_alive(self, owner: str) -> bool:
        raise NotImplementedError

    def _forget_owner(self, owner: str) -> None:
        """A dead owner's operations are resolved."""

    def _after_recover(self) -> None:
        """After the recovery pass (sweeping what dead owners left)."""

    @functools.cached_property
    def blobs(self) -> Any:
        """Content-addressed encrypted blobs (:mod:`ketch_store_kit.blobs`; checkpoints)."""
        from ketch_store_kit.blobs import Blobs

        return Blobs(self)

    def _copy_extras(self, conn: Any, source_id: str, fork_id: str) -> None:
        """A fork gets its source's checkpoint records, inside its transaction."""
        from ketch_store_kit import blobs

        blobs.copy_session(conn, self.fields, source_id, fork_id)

    def _forget_extras(self, conn: Any, session_id: str) -> None:
        """A deleted session's checkpoint records, inside the delete transaction."""
        from ketch_store_kit import blobs

        blobs.forget_session(conn, session_id)

    def _after_delete(self) -> None:
        """After a session was deleted: collect the blobs nothing refers to any more."""
        from ketch_store_kit import blobs

        self.blobs.collect_garbage(grace=blobs.DELETE_GRACE_SECONDS)

    def _list_fallback(self, query: str, params: tuple[Any, ...], errors: list[str]) -> list[Any]:
        """The session list when reading it whole failed on damage."""
        raise DamagedSession("the session list cannot be read")

    def _fence(self, conn: Any, session_id: str) -> None:
        """Inside an append's transaction, before anything is written: refuse if this
        process is no longer the session's writer (a store whose writer locks can be
        lost, such as leases, checks that here)."""

    def damage(self) -> str | None:
        """What the database's own check finds wrong (None: sound, or no such check)."""
        return None

    def verify_store(self) -> list[str]:
        """Problems with the store-wide records (``ketch sessions verify``)."""
        return []

    def close(self) -> None:
        raise NotImplementedError

    def session_ids(self) -> list[str]:
        with self.lock:
            return [
                str(row[0]) for row in self.conn.execute("SELECT id FROM sessions ORDER BY id", ())
            ]

    @property
    def encrypted(self) -> bool:
        return self.fields.encrypted

    @property
    def cipher(self) -> FieldCipher:
        return self.fields.cipher

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
            rebind(conn, self.fields, session_id)

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
            if {"provider", "model", "mode"} & set(names):
                rebind(conn, self.fields, session_id)

    def set_title(self, session_id: str, text: str) -> None:
        title = " ".join(text.split())[:TITLE_CHARS]
        with self.transaction() as conn:
            conn.execute(
                "UPDATE sessions SET title = ? WHERE id = ? AND title IS NULL",
                (self.fields.seal_text("sessions", "title", session_id, title), session_id),
            )

    def message_count(self, session_id: str) -> int:
        with self.lock, self.reading(f"session {session_id}"):
            row = self.conn.execute(
                "SELECT messages FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
        return int(row[0]) if row else 0

    def has_session(self, session_id: str) -> bool:
        with self.lock, self.reading(f"session {session_id}"):
            return (
                self.conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()
                is not None
            )

    def resolve_id(self, text: str) -> str:
        """A full session id from an id or a unique prefix of one."""
        text = text.strip()
        if not text:
            raise KetchError("no session id given", exit_code=2)
        with self.lock, self.reading("the session list"):
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
        with self.lock, self.reading("the session list"):
            rows = self.conn.execute(
                "SELECT id, name FROM sessions WHERE name IS NOT NULL ORDER BY updated DESC"
            ).fetchall()
        named: list[tuple[str, str]] = []
        for sid, sealed in rows:
            with contextlib.suppress(KetchError):
                named.append((str(sid), self.fields.open_text("sessions", "name", sid, sealed)))
        exact = [sid for sid, value in named if value == name]
        return exact or [sid for sid, value in named if value.casefold() == name.casefold()]

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
        conn: Any,
        session_id: str,
        kind: str,
        payload: bytes,
        *,
        event_id: str,
        ts: float,
        messages: int = 0,
        extra: Extra | None = None,
    ) -> int | None:
        self._fence(conn, session_id)
        if conn.execute("SELECT 1 FROM journal WHERE event_id = ?", (event_id,)).fetchone():
            return None
        cursor = conn.execute(
            "UPDATE sessions SET last_seq = last_seq + 1, messages = messages + ?, updated = CASE WHEN updated < ? THEN ? ELSE updated END WHERE id = ?",
            (messages, ts, ts, session_id),
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
            "journal", "payload", entry_key(session_id, seq, kind, event_id), payload
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
        with self.lock, self.reading(f"session {session_id}"):
            rows = self.conn.execute(
                "SELECT seq, event_id, kind, ts, payload, mac FROM journal WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        return [
            Row(seq, event_id, kind, ts, bytes(payload), None if mac is None else bytes(mac))
            for seq, event_id, kind, ts, payload, mac in rows
        ]

    def _end(self, session_id: str) -> tuple[int, bytes | None]:
        with self.lock, self.reading(f"session {session_id}"):
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
                    entry_key(session_id, row.seq, row.kind, row.event_id),
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
                    f"session {session_id} cannot be read: {self.where} is damaged there ({report.damage}; {report.shown()}). {self.damage_hint}"
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
                "journal", "payload", entry_key(sid, seq, kind, event_id), payload
            )

        def at_the_same_place(seq: int) -> list[tuple[str, str, str]]:
            with self.lock, contextlib.suppress(*self.driver_errors):
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

    def verify_session(self, session_id: str) -> Report:
        """Check every encrypted field of a session and its journal chain; never raises
        for what it finds (that is the report)."""
        report = Report(session_id)
        try:
            with self.lock, self.reading(f"session {session_id}"):
                header = self.conn.execute(
                    "SELECT workspace, name, title, last_seq, head, provider, model, mode, workspace_index, binding "
                    "FROM sessions WHERE id = ?",
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
            problem = self._binding_problem(session_id, tuple(header[5:9]), header[9])
            if problem:
                report.problems.append(problem)
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
        with self.lock, self.reading(f"session {source_id}"):
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
            rebind(conn, self.fields, fork)
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
            self._copy_extras(conn, source_id, fork)  # its checkpoints come along
        return fork

    # --- operations -------------------------------------------------------------------------------

    def call_key(self, session_id: str, tool_call_id: str) -> str:
        return self.fields.index(f"call\x00{session_id}\x00{tool_call_id}")[:40]

    def operation_statuses(self, session_id: str) -> dict[str, str]:
        with self.lock, self.reading(f"session {session_id}"):
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
                alive[owner] = self._owner_alive(owner)
            if alive[owner]:
                continue
            held = self.writers.holds(session_id)
            if not self.writers.try_claim(session_id):
                continue  # a live ketch writes this session now: it is that one's to recover
            dead_owners.add(owner)
            now = time.time()

            def mark(
                conn: Any,
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
            self._forget_owner(owner)
        self._after_recover()
        return self.recovered

    def latest_session_id(self, workspace: str) -> str | None:
        with self.lock, self.reading("the session list"):
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
        with self.lock, self.reading(f"session {session_id}"):
            row = self.conn.execute(
                "SELECT workspace, name, title, provider, model, mode, created, updated, input_tokens, output_tokens, "
                "cached_tokens, reasoning_tokens, workspace_index, binding FROM sessions WHERE id = ?",
                (session_id,),
            ).fetchone()
        if row is None:
            raise KetchError(f"no session '{session_id}'")
        problem = self._binding_problem(session_id, (*row[3:6], row[12]), row[13])
        if problem:
            raise IntegrityError(
                f"session {session_id} failed its integrity check: {problem}. Nothing was sent or changed; "
                f"`ketch sessions verify {session_id}` shows the whole report"
            )
        row = row[:12]
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

    def _binding_problem(
        self, session_id: str, columns: tuple[Any, ...], binding: Any
    ) -> str | None:
        """Why a row's provider, model, mode and workspace index cannot be trusted, or None."""
        if binding is None:
            return "its provider, model, mode and workspace columns have no integrity check (cleared outside ketch)"
        if binding_of(self.fields, session_id, columns) != bytes(binding):
            return (
                "its provider, model, mode or workspace columns were altered outside ketch "
                "(they decide where the transcript is sent)"
            )
        return None

    def history(self, session_id: str) -> Any:
        """The record plus the operation history (:class:`ketch_store_kit.record.Loaded`)."""
        from ketch_store_kit.children import children
        from ketch_store_kit.record import build

        session_id = self.resolve_id(session_id)
        header = self._header(session_id)
        with gc_paused():  # thousands of small objects at once: collection would only slow it
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
        with gc_paused():
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
            with self.lock, self.reading("the session list"):
                rows = self.conn.execute(query + " ORDER BY updated DESC", params).fetchall()
        except DamagedSession:
            if errors is None:
                raise
            rows = self._list_fallback(query, params, errors)
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

    def delete_session(self, session_id: str) -> None:
        session_id = self.resolve_id(session_id)
        held = self.writers.holds(session_id)
        if not held and not self.writers.try_claim(session_id):
            raise KetchError(
                f"session {session_id} is open in another ketch ({self.writers.holder(session_id)}); close it first"
            )
        with self.transaction() as conn:
            conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            conn.execute("DELETE FROM journal WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM operations WHERE session_id = ?", (session_id,))
            self._forget_extras(conn, session_id)
        self.writers.forget(session_id)
        self._after_delete()

    def rename_session(self, session_id: str, name: str) -> None:
        session_id = self.resolve_id(session_id)
        name = " ".join(name.split())
        value = self.fields.seal_text("sessions", "name", session_id, name) if name else None
        with self.transaction() as conn:
            conn.execute("UPDATE sessions SET name = ? WHERE id = ?", (value, session_id))

    def list_approvals(self, workspace: str) -> list[str]:
        index = self.fields.index(workspace)
        with self.lock, self.reading("the saved approvals"):
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
                "INSERT INTO approvals (workspace_index, scope_index, scope, created) VALUES (?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
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


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def entry_key(session_id: str, seq: int, kind: str, event_id: str) -> str:
    return f"{session_id}/{seq}/{kind}/{event_id}"


def opens_keycheck(fields: Fields, meta: dict[str, bytes]) -> bool:
    try:
        return fields.open("meta", "keycheck", "store", meta.get("keycheck", b"")) == KEY_CHECK
    except IntegrityError:
        return False


def _cause(exc: KetchError) -> str:
    text = exc.message
    return text[text.find("(") + 1 : text.find(")")] if "(" in text and ")" in text else text
