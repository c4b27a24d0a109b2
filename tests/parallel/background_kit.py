"""Helpers for background runs: start one, wait for states, look at /proc."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from tests.parallel.conftest import Ketch

RUN = ("--provider", "scripted")


def start(ketch: Ketch, prompt: str, script: list[dict[str, Any]], *extra: str) -> str:
    result = ketch("-p", prompt, *RUN, *extra, "--background", script=script)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    session = result.stdout.strip()
    assert session.startswith("ses_"), result.stdout
    return session


def ps(ketch: Ketch, *extra: str) -> dict[str, dict[str, Any]]:
    result = ketch("ps", "--json", *extra)
    assert result.returncode == 0, result.stderr
    return {row["session_id"]: row for row in json.loads(result.stdout)["sessions"]}


def wait_for(predicate: Any, what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def state_of(ketch: Ketch, session: str) -> str:
    row = ps(ketch, "--all").get(session)
    return row["state"] if row else ""


def status_file(ketch: Ketch, session: str) -> dict[str, Any]:
    for path in (ketch.state / "background").glob("bg_*.json"):
        data = json.loads(path.read_text())
        if data["session_id"] == session:
            return data
    raise AssertionError(f"no status for {session}")


def processes() -> dict[int, dict[str, Any]]:
    """Every process: its parent, process group, session and command line."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[-1].split()
            cmdline = (
                Path(f"/proc/{entry}/cmdline")
                .read_bytes()
                .replace(b"\0", b" ")
                .decode(errors="replace")
            )
        except OSError:
            continue
        if stat[0] == "Z":
            continue
        found[int(entry)] = {
            "ppid": int(stat[1]),
            "pgid": int(stat[2]),
            "sid": int(stat[3]),
            "cmd": cmdline,
        }
    return found


def works_in(pid: int, folder: Path) -> bool:
    """Whether ``pid``'s current directory is ``folder`` or below it."""
    try:
        cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return False
    folder = folder.resolve()
    return cwd == folder or folder in cwd.parents


def running(command: str, folder: Path) -> list[int]:
    """The live processes running exactly ``command`` (not a shell or wrapper that names
    it) in ``folder``: a test's own repository, as other tests run the same commands."""
    argv = command.split()
    return [
        pid for pid, p in processes().items() if p["cmd"].split() == argv and works_in(pid, folder)
    ]


def zombies_of(parent: int) -> list[int]:
    """The exited children ``parent`` has not reaped."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[-1].split()
            except OSError:
                continue
            if stat[0] == "Z" and int(stat[1]) == parent:
                found.append(int(entry))
    return found


def left_of_run(status: dict[str, Any], repo: Path) -> dict[int, dict[str, Any]]:
    """The live processes of a run: its supervisor, its worker, their children, and
    anything working in its repository (zombies are not counted: their parent reaps them)."""
    ours = {status["supervisor_pid"], status["worker_pid"]}
    return {
        pid: process
        for pid, process in processes().items()
        if pid in ours or process["ppid"] in ours or works_in(pid, repo)
    }


def stop_every_run(ketch: Ketch) -> None:
    """End the runs a test left alive (one that failed half-way): a run waiting for an
    approval waits for ever, by design."""
    for path in (ketch.state / "background").glob("bg_*.json"):
        status = json.loads(path.read_text())
        supervisor = processes().get(status.get("supervisor_pid") or 0)
        if supervisor is not None and status["run"] in supervisor["cmd"]:
            ketch("stop", status["run"])
