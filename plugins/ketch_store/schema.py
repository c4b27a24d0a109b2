"""The database schema and its migrations.

``PRAGMA user_version`` holds the schema version. Each migration takes the database
from version N-1 to N inside one transaction; a database from a newer ketch is
refused rather than guessed at.

Sensitive columns (BLOB) hold cipher envelopes; the rest (ids, timestamps, model and
mode names, counters, statuses) is what listing and recovery need in the open.
"""

from __future__ import annotations

import sqlite3

SCHEMA_VERSION = 3

# The triggers that keep the journal append-only; a rotation (re-encrypting every entry)
# and the version-2 chaining lift them inside their own transaction.
TRIGGERS = """
CREATE TRIGGER journal_append_only BEFORE UPDATE ON journal
BEGIN
    SELECT RAISE(ABORT, 'the journal is append-only');
END;
CREATE TRIGGER journal_keeps_live_sessions BEFORE DELETE ON journal
WHEN EXISTS (SELECT 1 FROM sessions WHERE id = OLD.session_id)
BEGIN
    SELECT RAISE(ABORT, 'journal entries go only with their session');
END;
"""

_V1 = f"""
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    workspace_index TEXT NOT NULL,      -- HMAC-SHA-256 of the workspace path
    workspace BLOB NOT NULL,            -- encrypted path
    name BLOB,                          -- encrypted, set by rename
    title BLOB,                         -- encrypted, from the first prompt
    provider TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    mode TEXT NOT NULL DEFAULT 'build',
    created REAL NOT NULL,
    updated REAL NOT NULL,
    messages INTEGER NOT NULL DEFAULT 0,
    last_seq INTEGER NOT NULL DEFAULT 0, -- the per-session journal sequence
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_workspace ON sessions (workspace_index, updated);
CREATE INDEX sessions_by_updated ON sessions (updated);

-- Append-only: every state change of a session, in order.
CREATE TABLE journal (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    ts REAL NOT NULL,
    payload BLOB NOT NULL,              -- encrypted JSON
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE UNIQUE INDEX journal_by_event_id ON journal (event_id);
{TRIGGERS}
-- Tool effects: dispatched before they run, finished after; unknown_outcome after a crash.
CREATE TABLE operations (
    session_id TEXT NOT NULL,
    call_key TEXT NOT NULL,             -- keyed index of the tool call id
    status TEXT NOT NULL,
    owner TEXT NOT NULL DEFAULT '',     -- the process that dispatched it
    dispatched_seq INTEGER,
    finished_seq INTEGER,
    updated REAL NOT NULL,
    PRIMARY KEY (session_id, call_key)
) WITHOUT ROWID;
CREATE INDEX operations_in_flight ON operations (status) WHERE status = 'dispatched';

-- "Always allow" scopes, per workspace.
CREATE TABLE approvals (
    workspace_index TEXT NOT NULL,
    scope_index TEXT NOT NULL,
    scope BLOB NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (workspace_index, scope_index)
) WITHOUT ROWID;
"""

# Version 2: the journal is a MAC chain. Each entry's ``mac`` binds its identity, its
# timestamp, its sealed payload and the previous entry's ``mac``; the session's ``head``
# binds its last sequence number to its last ``mac`` (so a cut-off tail shows). Entries
# written before version 2 are chained when the store first opens with its key.
_V2 = """
ALTER TABLE journal ADD COLUMN mac BLOB;
ALTER TABLE sessions ADD COLUMN head BLOB;
"""

# Version 3: the columns that decide where a session's content goes (provider, model,
# mode, workspace index) are bound by a MAC (``ketch_store_kit.binding``). Sessions
# written before are bound the first time the store opens with its key (once: meta
# ``bound`` records it, so a binding cleared later is named, never silently redone).
_V3 = """
ALTER TABLE sessions ADD COLUMN binding BLOB;
"""

# MIGRATIONS[n] takes a database at version n-1 to version n.
MIGRATIONS: dict[int, str] = {1: _V1, 2: _V2, 3: _V3}


def lift_triggers(conn: sqlite3.Connection) -> None:
    conn.execute("DROP TRIGGER IF EXISTS journal_append_only")
    conn.execute("DROP TRIGGER IF EXISTS journal_keeps_live_sessions")


def restore_triggers(conn: sqlite3.Connection) -> None:
    for statement in _statements(TRIGGERS):
        conn.execute(statement)


class SchemaTooNew(Exception):
    pass


def migrate(conn: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Bring the database to ``target``; returns the version it started at."""
    current = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if current > target:
        raise SchemaTooNew(
            f"schema version {current} is newer than this ketch understands ({target})"
        )
    for version in range(current + 1, target + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _statements(MIGRATIONS[version]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {int(version)}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return current


def _statements(script: str) -> list[str]:
    """Split a script into statements (executescript would commit on its own)."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--") and not buffer.strip():
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements
