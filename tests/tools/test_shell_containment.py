"""No process a command starts outlives it, its session or ketch -- setsid and double forks
included (issue 23 item 6, issue 33 item 10), with the sandbox and without it.

Real processes, checked in /proc from the host: each command starts ``sleep MARKER.N``
processes that leave the command's process group (``setsid -f``, ``(setsid ... &)``,
a double fork through ``sh -c``), and ``nohup ... &`` in the group. After the command
ends, the session ends, the turn is cancelled, or ketch gets SIGTERM, SIGINT, SIGHUP or
SIGKILL, none may be alive (re-parented to init, they would be).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from ketch_tools_testkit import make_session

from ketch.testing import Harness, approve_all, call, text
from ketch.testing.harness import isolated_env

FAST = {"shell": {"kill_grace": 0.5}}


def _sandbox_works() -> bool:
    from ketch_sandbox.bwrap import probe

    return probe().available


needs_sandbox = pytest.mark.skipif(not _sandbox_works(), reason="no working sandbox here")
SANDBOX = [
    pytest.param(False, id="no-sandbox"),
    pytest.param(True, marks=needs_sandbox, id="sandbox"),
]


def new_marker() -> str:
    return f"63{os.getpid() % 1000}{time.monotonic_ns() % 10**7}."


def escaping(marker: str, first: int = 1) -> str:
    """A command line leaving four ``sleep`` processes behind, three outside its group."""
    return (
        f"setsid -f sleep {marker}{first}; "
        f"(setsid sleep {marker}{first + 1} &); "
        f"sh -c 'sleep {marker}{first + 2} & exit 0'; "
        f"nohup sleep {marker}{first + 3} >/dev/null 2>&1 & "
        "echo started"
    )


def marked(marker: str) -> list[int]:
    """Live (non-zombie) ``sleep MARKER...`` processes."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read()
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        state = stat[stat.rfind(b")") + 2 :].split()[0]
        if cmdline.startswith(b"sleep\0" + marker.encode()) and state not in (b"Z", b"X"):
            found.append(int(name))
    return found


def wait_gone(marker: str, timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while marked(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return marked(marker)


def wait_up(marker: str, count: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while len(marked(marker)) < count and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.fixture
def cleanup() -> Any:
    markers: list[str] = []
    yield markers
    for marker in markers:
        for pid in marked(marker):
            os.kill(pid, signal.SIGKILL)


def session(tmp_path: Path, sandbox: bool) -> Any:
    bundled = ["fs", "shell", "guards", *(["sandbox"] if sandbox else [])]
    harness = Harness.create(
        tmp_path,
        bundled=bundled,
        settings={"tools": FAST},
        config=f"[sandbox]\nenabled = {str(sandbox).lower()}\n",
    )
    assert (harness.session.snapshot().facts.get("sandboxed") is True) is sandbox
    return harness


@pytest.mark.parametrize("sandbox", SANDBOX)
def test_what_a_finished_command_left_is_ended(tmp_path: Path, sandbox: bool, cleanup) -> None:
    marker = new_marker()
    cleanup.append(marker)
    harness = session(tmp_path, sandbox)
    from ketch_tools_testkit import ToolSession

    started = time.monotonic()
    result = ToolSession(harness, approve_all).call("shell", {"command": escaping(marker)})
    assert "started" in result.output
    assert time.monotonic() - started < 15, "the command returned when it ended"
    assert wait_gone(marker, 3) == []
    if not sandbox:  # in the sandbox the PID namespace ends them with the command
        assert "left processes running; they were stopped" in result.output


@pytest.mark.parametrize("sandbox", SANDBOX)
def test_the_timeout_ends_what_left_the_group(tmp_path: Path, sandbox: bool, cleanup) -> None:
    marker = new_marker()
    cleanup.append(marker)
    harness = session(tmp_path, sandbox)
    from ketch_tools_testkit import ToolSession

    command = escaping(marker) + f"; sleep {marker}9"
    result = ToolSession(harness, approve_all).call("shell", {"command": command, "timeout": 2})
    assert "timed out" in result.output
    assert wait_gone(marker, 5) == []


@pytest.mark.parametrize("sandbox", SANDBOX)
def test_a_cancelled_turn_ends_what_left_the_group(tmp_path: Path, sandbox: bool, cleanup) -> None:
    marker = new_marker()
    cleanup.append(marker)
    harness = session(tmp_path, sandbox)
    command = escaping(marker) + f"; sleep {marker}9"
    harness.provider.add(call("shell", {"command": command, "timeout": 600}), text("never"))

    async def scenario() -> Any:
        task = asyncio.create_task(harness.turn("run it", approver=approve_all))
        deadline = time.monotonic() + 20
        while len(marked(marker)) < 5 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        task.cancel()
        return await task

    end = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert end.stop_reason == "cancelled"
    assert wait_gone(marker, 5) == []


@pytest.mark.parametrize("sandbox", SANDBOX)
def test_a_job_and_what_it_started_end_with_the_session(
    tmp_path: Path, sandbox: bool, cleanup
) -> None:
    """Background jobs are the session's: they end with it, daemons of theirs too."""
    marker = new_marker()
    cleanup.append(marker)
    harness = session(tmp_path, sandbox)
    from ketch_tools_testkit import ToolSession

    tools = ToolSession(harness, approve_all)
    command = escaping(marker) + f"; sleep {marker}9"
    started = tools.call("shell", {"command": command, "background": True})
    assert "Started job" in started.output
    wait_up(marker, 5)
    assert len(marked(marker)) == 5
    harness.kernel.end(harness.session, "exit")
    assert wait_gone(marker, 5) == []


def test_a_stopped_job_leaves_nothing(tmp_path: Path, cleanup) -> None:
    marker = new_marker()
    cleanup.append(marker)
    tools = make_session(tmp_path, settings=FAST)
    command = escaping(marker) + f"; sleep {marker}9"
    started = tools.call("shell", {"command": command, "background": True})
    job_id = int(started.output.split("Started job ")[1].split()[0])
    wait_up(marker, 5)
    stopped = tools.call("shell_job", {"action": "stop", "job_id": job_id})
    assert "Stopped job" in stopped.output
    assert wait_gone(marker, 5) == []


# --- ketch itself ends --------------------------------------------------------------------------


def _ketch_with_escapees(tmp_path: Path, marker: str, *, sandbox: bool) -> subprocess.Popen[str]:
    """``ketch -p`` with a background job and a foreground command still running, each
    having left processes outside its group; returns once all ten are up."""
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {**os.environ, **isolated_env(tmp_path / "k")}
    config = Path(env["KETCH_CONFIG_DIR"])
    config.mkdir(parents=True)
    (config / "config.toml").write_text(
        f'profile = "full-access"\n[permissions]\nallow = ["shell"]\n[sandbox]\nenabled = {str(sandbox).lower()}\n'
    )
    script = [
        call("shell", {"command": escaping(marker, 1) + f"; sleep {marker}5", "background": True}),
        call("shell", {"command": escaping(marker, 6) + f"; sleep {marker}0", "timeout": 600}),
        text("never"),
    ]
    (tmp_path / "script.json").write_text(json.dumps(script))
    env.update(
        KETCH_LOAD="ketch.testing.scripted_plugin", KETCH_SCRIPT=str(tmp_path / "script.json")
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "ketch", "-p", "go", "--provider", "scripted", "--output-format", "stream-json"],
        cwd=ws, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    wait_up(marker, 10, 40)
    if len(marked(marker)) < 10:
        proc.kill()
        out, err = proc.communicate(timeout=10)
        raise AssertionError(f"the commands never all started: {out[-2000:]!r} {err[-2000:]!r}")
    return proc


@pytest.mark.parametrize(
    ("signum", "sandbox"),
    [
        ("SIGTERM", False),
        ("SIGINT", False),
        ("SIGHUP", False),
        ("SIGKILL", False),
        pytest.param("SIGTERM", True, marks=needs_sandbox),
        pytest.param("SIGINT", True, marks=needs_sandbox),
        pytest.param("SIGHUP", True, marks=needs_sandbox),
        pytest.param("SIGKILL", True, marks=needs_sandbox),
    ],
)
def test_nothing_outlives_ketch(tmp_path: Path, signum: str, sandbox: bool, cleanup) -> None:
    marker = new_marker()
    cleanup.append(marker)
    proc = _ketch_with_escapees(tmp_path, marker, sandbox=sandbox)
    try:
        os.kill(proc.pid, getattr(signal, signum))
        proc.wait(timeout=30)
        assert wait_gone(marker, 10) == [], f"still running after ketch got {signum}"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)
