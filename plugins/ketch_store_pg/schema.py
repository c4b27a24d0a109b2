"""The PostgreSQL schema: the SQLite store's tables (BYTEA for sealed values), plus the
leases that replace its lock files and the team's wrapped keys.

What the server holds in the open: session ids, timestamps, provider/model/mode
names, counters, journal kinds and sequence numbers, operation statuses, HMAC-keyed
indexes and event ids, MAC chain links, lease holders (host name and pid), and each
member's public key and fingerprint. Everything else (titles, names, workspace paths,
every journal payload, approvals, checkpoint blobs, member names, the team key
itself) is ciphertext.
"""

from __future__ import annotations

from typing import Any

SCHEMA_VERSION = 1
NOW = "EXTRACT(EPOCH FROM clock_timestamp())::double precision"  # the server's clock, for leases

TABLES = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value BYTEA NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    workspace_index TEXT NOT NULL,
    workspace BYTEA NOT NULL,
    name BYTEA,
    title BYTEA,
    provider TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    mode TEXT NOT NULL DEFAULT 'build',
    created DOUBLE PRECISION NOT NULL,
    updated DOUBLE PRECISION NOT NULL,
    messages BIGINT NOT NULL DEFAULT 0,
    last_seq BIGINT NOT NULL DEFAULT 0,
    input_tokens BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    cached_tokens BIGINT NOT NULL DEFAULT 0,
    reasoning_tokens BIGINT NOT NULL DEFAULT 0,
    head BYTEA,
    binding BYTEA
);
CREATE INDEX IF NOT EXISTS sessions_by_workspace ON sessions (workspace_index, updated);
CREATE INDEX IF NOT EXISTS sessions_by_updated ON sessions (updated);
CREATE TABLE IF NOT EXISTS journal (
    session_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    event_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    ts DOUBLE PRECISION NOT NULL,
    payload BYTEA NOT NULL,
    mac BYTEA,
    PRIMARY KEY (session_id, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS journal_by_event_id ON journal (event_id);
CREATE TABLE IF NOT EXISTS operations (
    session_id TEXT NOT NULL,
    call_key TEXT NOT NULL,
    status TEXT NOT NULL,
    owner TEXT NOT NULL DEFAULT '',
    dispatched_seq BIGINT,
    finished_seq BIGINT,
    updated DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (session_id, call_key)
);
CREATE INDEX IF NOT EXISTS operations_in_flight ON operations (status) WHERE status = 'dispatched';
CREATE TABLE IF NOT EXISTS approvals (
    workspace_index TEXT NOT NULL,
    scope_index TEXT NOT NULL,
    scope BYTEA NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (workspace_index, scope_index)
);
-- One writer per session: a lease its holder renews; expired, anyone may take it over.
CREATE TABLE IF NOT EXISTS writers (
    session_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    host TEXT NOT NULL,
    pid BIGINT NOT NULL,
    expires DOUBLE PRECISION NOT NULL
);
-- Each process with tool calls in flight: recovery waits for its lease to expire.
CREATE TABLE IF NOT EXISTS owners (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid BIGINT NOT NULL,
    expires DOUBLE PRECISION NOT NULL
);
-- The team: the data key wrapped to each member's X25519 public key.
CREATE TABLE IF NOT EXISTS members (
    fingerprint TEXT PRIMARY KEY,
    public_key TEXT NOT NULL,
    name BYTEA NOT NULL,
    wrapped BYTEA NOT NULL,
    added DOUBLE PRECISION NOT NULL
);
"""

# The journal is append-only on the server too (a rotation lifts this inside its transaction).
TRIGGERS = (
    """CREATE OR REPLACE FUNCTION ketch_journal_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND current_setting('ketch.rotating', true) IS DISTINCT FROM 'on' THEN
        RAISE EXCEPTION 'the journal is append-only';
    END IF;
    IF TG_OP = 'DELETE' AND EXISTS (SELECT 1 FROM sessions WHERE id = OLD.session_id) THEN
        RAISE EXCEPTION 'journal entries go only with their session';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END $$ LANGUAGE plpgsql""",
    "DROP TRIGGER IF EXISTS journal_append_only ON journal",
    """CREATE TRIGGER journal_append_only BEFORE UPDATE OR DELETE ON journal
    FOR EACH ROW EXECUTE FUNCTION ketch_journal_append_only()""",
)

BLOBS = """
CREATE TABLE IF NOT EXISTS blobs (
    id TEXT PRIMARY KEY,
    used DOUBLE PRECISION NOT NULL,
    children BYTEA,
    data BYTEA NOT NULL
);
CREATE TABLE IF NOT EXISTS blob_records (
    session_id TEXT NOT NULL,
    collection TEXT NOT NULL,
    seq BIGINT NOT NULL,
    ts DOUBLE PRECISION NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (session_id, collection, seq)
);
CREATE TABLE IF NOT EXISTS blob_refs (
    session_id TEXT NOT NULL,
    collection TEXT NOT NULL,
    seq BIGINT NOT NULL,
    blob_id TEXT NOT NULL,
    PRIMARY KEY (session_id, collection, seq, blob_id)
);
CREATE INDEX IF NOT EXISTS blob_refs_by_blob ON blob_refs (blob_id);
"""


def _statements(script: str) -> list[str]:
    lines = [line for line in script.splitlines() if not line.strip().startswith("--")]
    return [part.strip() for part in "\n".join(lines).split(";") if part.strip()]


def create(conn: Any) -> None:
    """Create what is missing, in one transaction (serialized across clients by an
    advisory lock, so two first runs do not race)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(7301452)")
        if conn.execute("SELECT to_regclass('journal')").fetchone()[0] is not None:
            return
        for statement in _statements(TABLES) + _statements(BLOBS) + list(TRIGGERS):
            conn.execute(statement)
