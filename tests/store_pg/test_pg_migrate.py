"""Issue 28: ``ketch store migrate`` moves every session SQLite -> PostgreSQL -> SQLite,
exactly: 1,000 sessions round-trip with equal content digests, and ``ketch sessions
verify --all`` is clean at every stop. The CLI does the moving (real subprocesses);
the sessions are written through the store's own API first (a CLI run per session
would take minutes).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ketch.messages import Message, TextPart
from tests.store_pg.conftest import Machine

SESSIONS = 1000


def _open_local(machine: Machine, monkeypatch: pytest.MonkeyPatch, path: Path | None = None):  # type: ignore[no-untyped-def]
    import keyring.core

    from ketch.settings import Settings
    from ketch.testing.keyring_backend import FileKeyring
    from ketch_crypto import make_cipher
    from ketch_store.store import SqliteStore

    monkeypatch.setenv("KETCH_STATE_DIR", str(machine.root / "state"))
    monkeypatch.setenv("KETCH_TEST_KEYRING_FILE", str(machine.root / "keyring.json"))
    keyring.core.set_keyring(FileKeyring())
    return SqliteStore.open(
        path or machine.root / "state" / "sessions.db", make_cipher(Settings(), detach=False)
    )


def _fill(store, workspace: Path, count: int) -> list[str]:  # type: ignore[no-untyped-def]
    rng = random.Random(28)
    ids = []
    for n in range(count):
        sid = f"ses_migrate{n:05d}"
        store.ensure_session(
            sid,
            workspace=str(workspace),
            provider="scripted",
            model="m",
            mode="build",
            created=1.7e9 + n,
        )
        for turn in range(rng.randint(1, 3)):
            for role, words in (
                ("user", f"question {n}.{turn} é"),
                ("assistant", f"answer {n}.{turn} " * rng.randint(1, 20)),
            ):
                message = Message(
                    id=f"msg_{n}_{turn}_{role}", role=role, parts=(TextPart(text=words),)
                )
                store.append(
                    sid,
                    "message",
                    message.model_dump_json().encode(),
                    event_id=store.event_id(sid, f"{turn}{role}"),
                    ts=1.7e9 + n + turn,
                    messages=1,
                )
            store.append(
                sid,
                "turn_end",
                {"text": "", "stop_reason": "end_turn"},
                event_id=store.event_id(sid, f"end{turn}"),
                ts=1.7e9 + n + turn + 0.5,
            )
        if n % 3 == 0:
            store.rename_session(sid, f"name {n}")
        store.set_title(sid, f"question {n}")
        store.release(sid)
        ids.append(sid)
    store.add_approval(str(workspace), "shell(git status)")
    return ids


def test_a_thousand_sessions_round_trip_sqlite_postgres_sqlite(
    tmp_path: Path, pg_url: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ketch_store_kit.migrate import session_digest

    local = Machine(tmp_path / "home-a", "", "alice")
    (local.root / "config" / "config.toml").write_text("", encoding="utf-8")  # the SQLite file
    store = _open_local(local, monkeypatch)
    try:
        ids = _fill(store, workspace, SESSIONS)
        before = {sid: session_digest(store, sid) for sid in ids}
    finally:
        store.close()

    up = local.ketch("store", "migrate", "--to", pg_url, cwd=workspace, timeout=600)
    assert up.returncode == 0, up.stdout + up.stderr
    assert f"migrated {SESSIONS:,} sessions" in up.stdout
    on_server = local.ketch(
        "sessions", "verify", "--all", "--json", cwd=workspace, KETCH_STORE_URL=pg_url, timeout=600
    )
    report = json.loads(on_server.stdout)
    assert on_server.returncode == 0 and report["ok"] and len(report["sessions"]) == SESSIONS, (
        on_server.stderr
    )

    back = tmp_path / "back.db"
    down = local.ketch(
        "store", "migrate", "--from", pg_url, "--to", f"sqlite://{back}", cwd=workspace, timeout=600
    )
    assert down.returncode == 0, down.stdout + down.stderr
    returned = _open_local(local, monkeypatch, back)
    try:
        after = {sid: session_digest(returned, sid) for sid in returned.session_ids()}
        assert returned.list_approvals(str(workspace)) == ["shell(git status)"]
    finally:
        returned.close()
    assert after == before  # every session, exactly
    again = local.ketch("store", "migrate", "--to", pg_url, cwd=workspace, timeout=600)
    assert again.returncode == 0 and f"{SESSIONS:,} already there" in again.stdout, again.stdout
