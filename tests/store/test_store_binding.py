"""Issue 33 item 7: the columns that decide where a session's content goes (provider,
model, mode, workspace index) are bound into its integrity check. Edited in the file,
``ketch sessions verify`` names them and ``--continue`` refuses before anything is
sent: a listener standing in for the other provider is never contacted.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ketch.testing import text
from tests.store.conftest import cli_env, db_path, logged_requests, run_ketch


class Listener:
    """A loopback TCP listener that counts who connects (the provider a tampered row names)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.contacts = 0
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.contacts += 1
            conn.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.sock.close()


def _env(tmp_path: Path, listener: Listener, script: list[dict] | None = None) -> dict[str, str]:
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text(
        f'[providers.elsewhere]\nkind = "openai"\nbase_url = "http://127.0.0.1:{listener.port}/v1"\nmodel = "other-model"\n',
        encoding="utf-8",
    )
    env = cli_env(tmp_path, script, KETCH_CONFIG_DIR=str(config), OPENAI_API_KEY="sk-test")
    env["KETCH_PLUGINS"] += ",openai"
    return env


def _started(tmp_path: Path, ws: Path, listener: Listener) -> str:
    run = run_ketch(
        "-p", "remember the secret plan", "--provider", "scripted", "--output-format", "json",
        cwd=ws, env=_env(tmp_path, listener, [text("noted")]),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return str(json.loads(run.stdout)["session_id"])


@pytest.mark.parametrize(
    "edit",
    [
        "UPDATE sessions SET provider = 'elsewhere', model = 'other-model'",
        "UPDATE sessions SET provider = 'elsewhere'",
        "UPDATE sessions SET model = 'other-model'",
        "UPDATE sessions SET binding = NULL, provider = 'elsewhere'",
    ],
)
def test_edited_routing_columns_are_named_and_nothing_is_sent(
    tmp_path: Path, listener: Listener, edit: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    session_id = _started(tmp_path, ws, listener)
    before = len(logged_requests(tmp_path))
    with sqlite3.connect(db_path()) as raw:
        raw.execute(edit + " WHERE id = ?", (session_id,))

    verify = run_ketch("sessions", "verify", session_id, cwd=ws, env=_env(tmp_path, listener))
    assert verify.returncode == 1, verify.stdout + verify.stderr
    assert "provider, model, mode" in verify.stdout and "FAILED" in verify.stdout

    again = run_ketch(
        "-p", "go on", "--continue", cwd=ws, env=_env(tmp_path, listener, [text("x")])
    )
    assert again.returncode == 1 and "Traceback" not in again.stderr, again.stderr
    assert "failed its integrity check" in again.stderr and "provider" in again.stderr
    assert listener.contacts == 0  # the transcript went nowhere
    assert len(logged_requests(tmp_path)) == before  # not even to the recorded provider


def test_a_model_changed_by_ketch_stays_verified(tmp_path: Path, listener: Listener) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    session_id = _started(tmp_path, ws, listener)
    run = run_ketch(
        "-p", "go on", "--continue", "--model", "another", cwd=ws,
        env=_env(tmp_path, listener, [text("ok")]),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    with sqlite3.connect(db_path()) as raw:
        assert raw.execute("SELECT model FROM sessions WHERE id = ?", (session_id,)).fetchone() == (
            "another",
        )
    verify = run_ketch("sessions", "verify", session_id, cwd=ws, env=_env(tmp_path, listener))
    assert verify.returncode == 0, verify.stdout + verify.stderr
