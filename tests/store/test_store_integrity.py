"""The journal as a MAC chain: deleted, truncated, reordered, replayed and copied entries are
named by ``ketch sessions verify`` and refused by ``--resume``; a damaged database page is
a clear error naming the damaged session while the others stay exportable.

Sessions are made by real ``ketch -p`` runs; the tampering is what someone with the file
can do (SQL on it, the append-only triggers dropped); the damage is bytes overwritten in
the real file.
"""

from __future__ import annotations

import contextlib
import json
import random
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ketch.testing import call, text
from tests.store.conftest import cli_env, db_path, run_ketch

WORKSPACE_TURNS = [call("note", {"text": "alpha"}), call("note", {"text": "beta"}), text("done")]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def session(tmp_path: Path, workspace: Path, prompt: str) -> str:
    run = run_ketch(
        "-p",
        prompt,
        "--provider",
        "scripted",
        "--output-format",
        "json",
        cwd=workspace,
        env=cli_env(tmp_path, WORKSPACE_TURNS),
    )
    assert run.returncode == 0, run.stderr
    return str(json.loads(run.stdout)["session_id"])


@contextlib.contextmanager
def tamper() -> Iterator[sqlite3.Connection]:
    """The database as someone with the file sees it: no guard triggers."""
    raw = sqlite3.connect(db_path(), isolation_level=None)
    raw.execute("DROP TRIGGER IF EXISTS journal_append_only")
    raw.execute("DROP TRIGGER IF EXISTS journal_keeps_live_sessions")
    try:
        yield raw
    finally:
        raw.close()


def verify(tmp_path: Path, workspace: Path, *args: str) -> tuple[int, dict[str, list[str]], str]:
    run = run_ketch("sessions", "verify", *args, "--json", cwd=workspace, env=cli_env(tmp_path))
    assert "Traceback" not in run.stderr, run.stderr
    data = json.loads(run.stdout)
    return run.returncode, {s["id"]: s["problems"] for s in data["sessions"]}, run.stderr


def resume(tmp_path: Path, workspace: Path, session_id: str) -> str:
    run = run_ketch(
        "-p",
        "go on",
        "--provider",
        "scripted",
        "--resume",
        session_id,
        cwd=workspace,
        env=cli_env(tmp_path, [text("x")]),
    )
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert f"session {session_id} failed its integrity check" in run.stderr
    return run.stderr


def last_seq(raw: sqlite3.Connection, session_id: str) -> int:
    return int(
        raw.execute("SELECT last_seq FROM sessions WHERE id = ?", (session_id,)).fetchone()[0]
    )


def test_an_untouched_store_verifies(tmp_path: Path, workspace: Path) -> None:
    a, b = session(tmp_path, workspace, "first"), session(tmp_path, workspace, "second")
    code, problems, _ = verify(tmp_path, workspace, "--all")
    assert code == 0 and problems == {a: [], b: []}
    summary = run_ketch("sessions", "verify", "--all", cwd=workspace, env=cli_env(tmp_path))
    assert summary.returncode == 0 and "2 of 2 sessions intact" in summary.stderr
    text_run = run_ketch("sessions", "verify", a, cwd=workspace, env=cli_env(tmp_path))
    assert text_run.returncode == 0 and text_run.stdout.startswith(f"ok      {a}")
    count = int(text_run.stdout.split()[2])
    with tamper() as raw:
        assert count == last_seq(raw, a) > 6


def test_a_deleted_entry_is_named(tmp_path: Path, workspace: Path) -> None:
    a, b = session(tmp_path, workspace, "first"), session(tmp_path, workspace, "second")
    with tamper() as raw:
        raw.execute("DELETE FROM journal WHERE session_id = ? AND seq = 3", (a,))
    code, problems, _ = verify(tmp_path, workspace, "--all")
    assert code == 1 and problems[b] == []
    assert problems[a] == ["entry 3 is missing (deleted)"]
    assert "entry 3 is missing (deleted)" in resume(tmp_path, workspace, a)


def test_a_truncated_journal_is_named(tmp_path: Path, workspace: Path) -> None:
    a = session(tmp_path, workspace, "first")
    with tamper() as raw:
        end = last_seq(raw, a)
        raw.execute("DELETE FROM journal WHERE session_id = ? AND seq > ?", (a, end - 2))
    code, problems, _ = verify(tmp_path, workspace, a)
    assert code == 1 and problems[a] == [
        f"entries {end - 1}-{end} at the end are missing (the journal was truncated)"
    ]
    resume(tmp_path, workspace, a)
    # Cutting the session's end marker too does not hide it: the head is a MAC of the last entry.
    with tamper() as raw:
        raw.execute("UPDATE sessions SET last_seq = ? WHERE id = ?", (end - 2, a))
    code, problems, _ = verify(tmp_path, workspace, a)
    assert code == 1 and any("head does not match" in p for p in problems[a]), problems
    assert "head does not match" in resume(tmp_path, workspace, a)


def test_reordered_entries_are_named(tmp_path: Path, workspace: Path) -> None:
    a = session(tmp_path, workspace, "first")
    with tamper() as raw:
        raw.execute("UPDATE journal SET seq = -1 WHERE session_id = ? AND seq = 4", (a,))
        raw.execute("UPDATE journal SET seq = 4 WHERE session_id = ? AND seq = 5", (a,))
        raw.execute("UPDATE journal SET seq = 5 WHERE session_id = ? AND seq = -1", (a,))
    code, problems, _ = verify(tmp_path, workspace, a)
    assert code == 1
    assert problems[a] == [
        "entry 4 was written as entry 5 (entries were reordered)",
        "entry 5 was written as entry 4 (entries were reordered)",
    ]
    assert "reordered" in resume(tmp_path, workspace, a)


def test_a_replayed_entry_is_named(tmp_path: Path, workspace: Path) -> None:
    a = session(tmp_path, workspace, "first")
    with tamper() as raw:
        end = last_seq(raw, a)
        raw.execute(
            "INSERT INTO journal (session_id, seq, event_id, kind, ts, payload, mac) "
            "SELECT session_id, ?, event_id || '-again', kind, ts, payload, mac FROM journal WHERE session_id = ? AND seq = 2",
            (end + 1, a),
        )
        raw.execute("UPDATE sessions SET last_seq = ? WHERE id = ?", (end + 1, a))
    code, problems, _ = verify(tmp_path, workspace, a)
    assert code == 1 and f"entry {end + 1} is a replayed copy of entry 2" in problems[a], problems
    assert "replayed copy of entry 2" in resume(tmp_path, workspace, a)


def test_an_entry_copied_from_another_session_is_named(tmp_path: Path, workspace: Path) -> None:
    a, b = session(tmp_path, workspace, "first"), session(tmp_path, workspace, "second")
    with tamper() as raw:
        end = last_seq(raw, a)
        raw.execute(
            "INSERT INTO journal (session_id, seq, event_id, kind, ts, payload, mac) "
            "SELECT ?, ?, event_id || '-copied', kind, ts, payload, mac FROM journal WHERE session_id = ? AND seq = ?",
            (a, end + 1, b, end + 1 if last_seq(raw, b) > end else 2),
        )
        raw.execute("UPDATE sessions SET last_seq = ? WHERE id = ?", (end + 1, a))
    code, problems, _ = verify(tmp_path, workspace, "--all")
    assert code == 1 and problems[b] == []
    assert len(problems[a]) == 1 and problems[a][0].startswith(f"entry {end + 1} ")
    assert (
        "copied from another session" in problems[a][0]
        or f"copied from session {b}" in problems[a][0]
    )
    assert f"entry {end + 1}" in resume(tmp_path, workspace, a)


def test_a_copied_entry_in_the_same_place_is_named_with_its_session(
    tmp_path: Path, workspace: Path
) -> None:
    """The copy keeps its sequence number: the classifier finds where it came from."""
    a, b = session(tmp_path, workspace, "first"), session(tmp_path, workspace, "second")
    with tamper() as raw:
        raw.execute("DELETE FROM journal WHERE session_id = ? AND seq = 3", (a,))
        # event ids are unique store-wide, so the copy needs another one
        raw.execute(
            "INSERT INTO journal SELECT ?, seq, event_id || '-x', kind, ts, payload, mac FROM journal WHERE session_id = ? AND seq = 3",
            (a, b),
        )
    code, problems, _ = verify(tmp_path, workspace, a)
    assert code == 1 and problems[a] == [f"entry 3 was copied from session {b}"], problems


def test_every_encrypted_field_is_checked(tmp_path: Path, workspace: Path) -> None:
    a, b = session(tmp_path, workspace, "first"), session(tmp_path, workspace, "second")
    assert (
        run_ketch("sessions", "rename", a, "alpha", cwd=workspace, env=cli_env(tmp_path)).returncode
        == 0
    )
    with tamper() as raw:
        (name,) = raw.execute("SELECT name FROM sessions WHERE id = ?", (a,)).fetchone()
        raw.execute(
            "UPDATE sessions SET name = ? WHERE id = ?", (name, b)
        )  # moved to another record
        raw.execute(
            "UPDATE journal SET ts = ts + 1 WHERE session_id = ? AND seq = 2", (a,)
        )  # a plain column
    code, problems, _ = verify(tmp_path, workspace, "--all")
    assert code == 1
    assert problems[b] == [
        "its name does not authenticate (altered, moved from another session, or another key)"
    ]
    assert problems[a] == [
        "entry 2: its chain link does not match (its timestamp, kind or link was altered, or an entry before it was replaced)"
    ]


def test_an_upgraded_store_chains_its_old_entries(tmp_path: Path, workspace: Path) -> None:
    """Entries written before the journal was a chain (schema 1) are chained at the next open."""
    a = session(tmp_path, workspace, "first")
    with tamper() as raw:
        raw.execute("UPDATE journal SET mac = NULL")
        raw.execute("UPDATE sessions SET head = NULL")
    code, problems, _ = verify(tmp_path, workspace, a)
    assert code == 0 and problems == {a: []}
    with tamper() as raw:
        assert raw.execute("SELECT count(*) FROM journal WHERE mac IS NULL").fetchone()[0] == 0


# --- a damaged page ---------------------------------------------------------------------------


def damage_a_page_of(table: str, only: str, others: list[str]) -> int:
    """Overwrite (after its header) a leaf page of ``table`` that holds rows of session
    ``only`` and of none of ``others``; returns the page number."""
    with contextlib.closing(sqlite3.connect(db_path())) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        try:
            pages = [
                row[0]
                for row in raw.execute(
                    "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf'", (table,)
                )
            ]
        except sqlite3.OperationalError:
            pytest.skip("this SQLite has no dbstat table to find a page of one table")
        size = raw.execute("PRAGMA page_size").fetchone()[0]
    data = bytearray(db_path().read_bytes())
    for page in pages:
        start = (page - 1) * size
        chunk = bytes(data[start : start + size])
        if only.encode() in chunk and not any(o.encode() in chunk for o in others):
            data[start + 8 : start + size] = random.Random(page).randbytes(size - 8)
            db_path().write_bytes(bytes(data))
            return page
    pytest.fail(f"no leaf page of {table} holds only {only}'s rows: {pages}")


def test_a_damaged_journal_page_names_the_session_and_keeps_the_rest(
    tmp_path: Path, workspace: Path
) -> None:
    big = "x" * 1500
    small = [text("small")]

    def run(prompt: str, script: list[dict[str, object]]) -> subprocess.CompletedProcess[str]:
        return run_ketch(
            "-p",
            prompt,
            "--provider",
            "scripted",
            "--output-format",
            "json",
            cwd=workspace,
            env=cli_env(tmp_path, script),
        )

    a = json.loads(run("first", small).stdout)["session_id"]
    script = [call("note", {"text": f"{n} {big}"}) for n in range(25)] + [text("big done")]
    b = json.loads(run("second", script).stdout)["session_id"]
    c = json.loads(run("third", small).stdout)["session_id"]
    damage_a_page_of("journal", b, [a, c])
    env = cli_env(tmp_path, [text("after the damage")])

    listing = run_ketch("sessions", "list", cwd=workspace, env=env)
    assert listing.returncode == 0 and all(s in listing.stdout for s in (a, b, c)), listing.stderr
    for readable in (a, c):
        export = run_ketch(
            "sessions", "export", readable, "--format", "json", cwd=workspace, env=env
        )
        assert export.returncode == 0 and json.loads(export.stdout)["id"] == readable, export.stderr
    for action in (
        ["sessions", "export", b],
        ["sessions", "show", b],
        ["-p", "more", "--provider", "scripted", "--resume", b],
    ):
        broken = run_ketch(*action, cwd=workspace, env=env)
        assert broken.returncode == 1 and "Traceback" not in broken.stderr, broken.stderr
        assert len(broken.stderr.strip().splitlines()) == 1, broken.stderr
        assert (
            f"session {b} cannot be read: sessions.db is damaged there" in broken.stderr
            and "verify --all" in broken.stderr
        )
    code, problems, _ = verify(tmp_path, workspace, "--all")
    assert code == 1 and problems[a] == [] and problems[c] == []
    assert problems[b] and all("the database is damaged there" in p for p in problems[b]), problems[
        b
    ]
    # The store still opens. Whether SQLite can still write depends on where the new rows
    # fall in the damaged tree; when it cannot, the turn stops with the same clear error.
    fresh = run_ketch("-p", "new work", "--provider", "scripted", cwd=workspace, env=env)
    assert "Traceback" not in fresh.stderr
    if fresh.returncode:
        assert (
            fresh.returncode == 1
            and "sessions.db is damaged" in fresh.stderr
            and "verify --all" in fresh.stderr
        ), fresh.stderr
    else:
        assert fresh.stdout.strip() == "after the damage", fresh.stderr


def test_a_damaged_page_of_the_session_list_names_what_it_cannot_read(
    tmp_path: Path, workspace: Path
) -> None:
    ids = [session(tmp_path, workspace, f"prompt {n} " + "y" * 60) for n in range(40)]
    for sid in ids:  # long names make the sessions table span several pages
        assert (
            run_ketch(
                "sessions", "rename", sid, "n" * 900, cwd=workspace, env=cli_env(tmp_path)
            ).returncode
            == 0
        )
    with contextlib.closing(sqlite3.connect(db_path())) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = [
            r[0]
            for r in raw.execute(
                "SELECT pageno FROM dbstat WHERE name = 'sessions' AND pagetype = 'leaf'"
            )
        ]
        size = raw.execute("PRAGMA page_size").fetchone()[0]
    assert len(pages) > 2, pages
    data = bytearray(db_path().read_bytes())
    victim = pages[1]
    chunk = bytes(data[(victim - 1) * size : victim * size])
    lost = [sid for sid in ids if sid.encode() in chunk]
    data[(victim - 1) * size + 8 : victim * size] = random.Random(victim).randbytes(size - 8)
    db_path().write_bytes(bytes(data))
    listing = run_ketch("sessions", "list", "--all", cwd=workspace, env=cli_env(tmp_path))
    assert listing.returncode == 1 and "Traceback" not in listing.stderr, listing.stderr
    assert lost and all(
        f"session {sid}: its record sits on a damaged page" in listing.stderr for sid in lost
    )
    kept = [sid for sid in ids if sid not in lost]
    assert all(sid in listing.stdout for sid in kept)
    export = run_ketch("sessions", "export", kept[0], cwd=workspace, env=cli_env(tmp_path))
    assert export.returncode == 0, export.stderr
