"""Issue 28: a writer killed mid-turn and a server restarted mid-turn lose no acknowledged
entry and leave ``ketch sessions verify`` clean; the killed writer's session is taken over
by lease expiry (not by PID) and its call in flight is marked unknown_outcome.

"Acknowledged" is what a stream-json line reported: the store observes every event
before any frontend prints it, so a printed ``tool_result`` is a committed entry.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ketch.testing import call, text
from tests.store_pg.conftest import PG_DIR, Machine


def _results(session: dict) -> list[str]:
    return [op["tool_call_id"] for op in session["operations"] if op["status"] == "succeeded"]


def _show(machine: Machine, workspace: Path, session_id: str) -> dict:
    shown = machine.ketch("sessions", "show", session_id, "--json", cwd=workspace)
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


def test_sigkill_mid_write_loses_nothing_acknowledged_and_the_lease_expires(
    tmp_path: Path, pg_url: str, workspace: Path
) -> None:
    a = Machine(tmp_path / "home-a", pg_url, "alice", lease=3.0)
    script = [call("note", {"text": f"n{i}"}, id=f"call_{i}") for i in range(40)]
    script.append(call("pause", {"seconds": 30}, id="call_slow"))
    script.append(text("never reached"))
    run = a.popen("-p", "many notes", "--provider", "scripted", "--output-format", "stream-json",
                  "--max-iterations", "100", cwd=workspace, script=script)  # fmt: skip
    acknowledged: list[str] = []
    session_id = ""
    assert run.stdout is not None
    for line in run.stdout:
        event = json.loads(line)
        session_id = event.get("session_id", session_id)
        if event["type"] == "tool_result":
            acknowledged.append(event["tool_call_id"])
        if event["type"] == "tool_call" and event["id"] == "call_slow":
            time.sleep(0.3)  # the dispatch is journaled before the tool runs
            break
    os.killpg(run.pid, signal.SIGKILL)
    run.wait(timeout=30)
    assert len(acknowledged) == 40 and session_id

    began = time.monotonic()
    went_on = a.ketch("-p", "go on", "--continue", "--output-format", "json", cwd=workspace,
                      script=[text("recovered")])  # fmt: skip
    assert went_on.returncode == 0, went_on.stderr
    assert json.loads(went_on.stdout)["session_id"] == session_id  # taken over, not forked
    assert time.monotonic() - began >= 1.0 or "waiting" in went_on.stderr  # the lease, not a PID
    session = _show(a, workspace, session_id)
    assert set(acknowledged) <= set(_results(session))
    slow = [op for op in session["operations"] if op["tool_call_id"] == "call_slow"]
    assert slow and slow[0]["status"] == "unknown_outcome", slow
    verified = a.ketch("sessions", "verify", "--all", cwd=workspace)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def _restart_server() -> None:
    bindir = Path(PG_DIR, "bindir").read_text().strip()
    runner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    done = subprocess.run(
        [
            *runner,
            f"{bindir}/pg_ctl",
            "-D",
            f"{PG_DIR}/data",
            "-l",
            f"{PG_DIR}/server.log",
            "-m",
            "fast",
            "-w",
            "restart",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(
    not PG_DIR, reason="needs the server .ci/postgres started (KETCH_TEST_PG_DIR) to restart it"
)
def test_a_server_restart_mid_turn_loses_nothing(
    tmp_path: Path, pg_url: str, workspace: Path
) -> None:
    a = Machine(tmp_path / "home-a", pg_url, "alice")
    script = [call("note", {"text": "before"}, id="call_before"),
              call("pause", {"seconds": 4}, id="call_pause"),
              call("note", {"text": "after"}, id="call_after"),
              text("all done")]  # fmt: skip
    run = a.popen("-p", "survive a restart", "--provider", "scripted", "--output-format", "stream-json",
                  cwd=workspace, script=script)  # fmt: skip
    assert run.stdout is not None
    acknowledged: list[str] = []
    restarted = False
    for line in run.stdout:
        event = json.loads(line)
        if event["type"] == "tool_result":
            acknowledged.append(event["tool_call_id"])
        if event["type"] == "tool_call" and event["id"] == "call_pause" and not restarted:
            _restart_server()  # while the tool runs: the next append finds the connection gone
            restarted = True
    _, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    assert "reconnecting" in err
    assert acknowledged == ["call_before", "call_pause", "call_after"]
    session_id = json.loads(a.ketch("sessions", "list", "--json", cwd=workspace).stdout)[0]["id"]
    session = _show(a, workspace, session_id)
    assert _results(session) == acknowledged
    verified = a.ketch("sessions", "verify", "--all", cwd=workspace)
    assert verified.returncode == 0, verified.stdout + verified.stderr
