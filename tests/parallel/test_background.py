"""Background runs through real processes: started with ``-p … --background`` under a
terminal that then goes away, waiting for an approval that a person gives by attaching
(in a real pseudo-terminal), stopped with nothing left behind, and the machine's limits."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ketch.testing import call, text
from tests.parallel.background_kit import (
    left_of_run,
    processes,
    ps,
    running,
    start,
    state_of,
    status_file,
    stop_every_run,
    wait_for,
    zombies_of,
)
from tests.parallel.conftest import Ketch

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


@pytest.fixture(autouse=True)
def _no_run_outlives_its_test(ketch: Ketch) -> Iterator[None]:
    yield
    stop_every_run(ketch)


def finished(ketch: Ketch, session: str) -> str:
    return wait_for(
        lambda: (
            state_of(ketch, session)
            if state_of(ketch, session) in ("finished", "failed", "stopped")
            else ""
        ),
        f"{session} to end",
    )


@needs_tmux
def test_a_background_run_outlives_its_terminal(ketch: Ketch, repo: Path, tmp_path: Path) -> None:
    """Started in a tmux pane that is then killed (its processes get SIGHUP), the run
    goes on and finishes its work."""
    environ, _ = ketch.script_env(
        [
            call("write_file", {"path": "out.txt", "content": "made in the background\n"}),
            {**text("all done"), "delay": 3.0},
        ]
    )
    socket = str(tmp_path / "tmux.sock")
    env_args = [
        f"{k}={v}"
        for k, v in environ.items()
        if k.startswith(("KETCH_", "XDG_", "HOME", "PYTHON", "PATH", "GIT_"))
    ]
    ids = tmp_path / "id.txt"
    command = (
        f"env {' '.join(_quote(a) for a in env_args)} {sys.executable} -m ketch -p 'write out.txt' "
        f"--provider scripted --profile full-access --background > {ids}; sleep 60"
    )
    subprocess.run(
        ["tmux", "-S", socket, "new-session", "-d", "-s", "bg", "-x", "100", "-y", "20", command],
        check=True,
        cwd=repo,
    )
    session = wait_for(lambda: ids.exists() and ids.read_text().strip(), "the background run's id")
    status = status_file(ketch, session)
    # The terminal goes away: the pane's processes get SIGHUP, the tmux server is gone.
    subprocess.run(["tmux", "-S", socket, "kill-server"], check=False)
    supervisor = processes()[status["supervisor_pid"]]
    assert supervisor["sid"] != os.getsid(0)  # not in the terminal's session (nor ours)
    assert supervisor["pgid"] == status["supervisor_pid"]  # its own process group
    assert supervisor["ppid"] != os.getpid()  # nobody's child: adopted
    # Hang-ups sent straight to it are ignored too.
    os.kill(status["supervisor_pid"], signal.SIGHUP)
    os.killpg(os.getpgid(status["worker_pid"]), signal.SIGHUP)
    assert finished(ketch, session) == "finished"
    assert (repo / "out.txt").read_text() == "made in the background\n"
    shown = ketch("sessions", "show", session, "--json")
    assert "all done" in shown.stdout


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def test_a_run_that_needs_approval_waits_is_attached_approved_and_goes_on(
    ketch: Ketch, repo: Path, tmp_path: Path
) -> None:
    pexpect = pytest.importorskip("pexpect")
    notified = tmp_path / "notified.jsonl"
    ketch.config(f'[[hooks.Notification]]\nmatcher = "*"\ncommand = "cat >> {notified}"\n')
    session = start(
        ketch,
        "write approved.txt",
        [
            call("write_file", {"path": "approved.txt", "content": "approved\n"}),
            text("written after approval"),
        ],
    )
    row = wait_for(
        lambda: ps(ketch).get(session, {}).get("waiting_for") and ps(ketch)[session], "an approval"
    )
    assert row["state"] == "waiting"
    # The person is told (the Notification hook), and the run waits for them.
    note = wait_for(lambda: notified.exists() and notified.read_text(), "the notification")
    assert "permission_prompt" in note and "write_file" in note
    assert (
        row["waiting_for"][0]["tool"] == "write_file"
        and "approved.txt" in row["waiting_for"][0]["summary"]
    )
    listed = ketch("ps")
    assert "waiting for approval: write_file" in listed.stdout
    status = status_file(ketch, session)
    # What exits under the run while it waits (the sandbox's processes) is reaped, not
    # left a zombie until the run ends.
    wait_for(lambda: not zombies_of(status["supervisor_pid"]), "the supervisor to reap", 5)
    # Its events are in the store while it runs: another ketch reads them there.
    journal = ketch("sessions", "show", session, "--json")
    assert journal.returncode == 0 and "write approved.txt" in journal.stdout
    assert "write_file" in journal.stdout  # the call that waits
    time.sleep(1.5)  # nothing answers by itself
    assert ps(ketch)[session]["state"] == "waiting" and not (repo / "approved.txt").exists()

    environ, _ = ketch.script_env([])
    child = pexpect.spawn(
        sys.executable,
        ["-m", "ketch", "attach", session[:12]],
        cwd=str(repo),
        env=environ,
        encoding="utf-8",
        dimensions=(40, 140),
        timeout=30,
        use_poll=True,  # fds past 1024 in a long test process
    )
    try:
        child.expect("attached to " + session)
        child.expect("write approved.txt")  # the history: the prompt it runs
        child.expect("allow it\\?")
        child.send("y\r")
        child.expect("written after approval")
        child.expect("the background turn ended: end_turn")
        child.expect("opening .* in the shell")
        child.expect("resumed " + session)
        child.expect("Type a request")
        time.sleep(0.5)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert (repo / "approved.txt").read_text() == "approved\n"
    assert finished(ketch, session) == "finished"
    # Once it finished, nothing of the run is left: no supervisor, no worker, nothing
    # they started, nothing working in the repository.
    with contextlib.suppress(AssertionError):
        wait_for(lambda: not left_of_run(status, repo), "the run's processes to end", 10)
    assert left_of_run(status, repo) == {}
    events = ketch("sessions", "show", session, "--json").stdout
    assert '"approved": true' in events.replace('"approved":true', '"approved": true')


def test_attach_needs_a_terminal(ketch: Ketch) -> None:
    session = start(
        ketch, "wait", [call("write_file", {"path": "x.txt", "content": "x"}), text("ok")]
    )
    wait_for(lambda: ps(ketch).get(session, {}).get("waiting_for"), "an approval")
    refused = ketch("attach", session)
    assert refused.returncode == 2 and "needs a terminal" in refused.stderr
    stopped = ketch("stop", session)
    assert stopped.returncode == 0, stopped.stderr


def test_stop_ends_the_turn_and_leaves_no_process(ketch: Ketch, repo: Path, tmp_path: Path) -> None:
    # A hook of the person's own that leaves a process behind in a session of its own
    # (beyond any process group ketch ends), and a command still running at the stop.
    # The hook returns only once that process has left its group (the process itself
    # touches the marker, after setsid): ketch ends the hook's group when the hook exits,
    # and a child that had not called setsid yet was still in it, and ended with it.
    marker = tmp_path / "hook-ran"
    escape = f"setsid sh -c 'touch {marker}; exec sleep 313' > /dev/null 2>&1 < /dev/null &"
    ketch.config(
        "[background]\nstop_grace = 60\n"  # a loaded machine: a clean end, never the kill
        '[[hooks.SessionStart]]\nmatcher = "*"\n'
        f'command = "{escape} while [ ! -e {marker} ]; do sleep 0.05; done"\n'
    )
    session = start(
        ketch,
        "run something long",
        [call("shell", {"command": "sleep 317"}), text("never")],
        "--profile",
        "full-access",
    )
    status = status_file(ketch, session)
    wait_for(lambda: running("sleep 317", repo), "the command to run")
    wait_for(marker.exists, "the SessionStart hook to run")
    escaped = wait_for(lambda: running("sleep 313", repo), "the hook's process")
    supervisor, worker = status["supervisor_pid"], status["worker_pid"]
    assert processes()[escaped[0]]["sid"] == escaped[0]  # it leads a session of its own
    commands = running("sleep 313", repo) + running("sleep 317", repo)
    groups = {supervisor, worker} | {processes()[p]["pgid"] for p in commands}
    stopped = ketch("stop", session)
    assert stopped.returncode == 0, stopped.stderr
    assert "turn was cancelled" in stopped.stdout
    left = processes()
    assert not running("sleep 313", repo) and not running("sleep 317", repo)
    assert not [pid for pid, p in left.items() if p["pgid"] in groups], "a process group survived"
    assert supervisor not in left and worker not in left
    assert not [pid for pid, p in left.items() if p["ppid"] in (supervisor, worker)]
    assert state_of(ketch, session) == "stopped"
    assert status_file(ketch, session)["reaped"] >= 1  # the escaped one: ended by the supervisor
    journal = ketch("sessions", "show", session, "--json").stdout
    assert "Cancelled by the user before this call finished" in journal  # turn_end cancelled
    assert ps(ketch) == {}


def test_the_machine_limits_refuse_plainly(ketch: Ketch) -> None:
    ketch.config("[background]\nmax_running = 1\n")
    first = start(
        ketch, "one", [call("write_file", {"path": "one.txt", "content": "1"}), text("ok")]
    )
    wait_for(lambda: ps(ketch).get(first, {}).get("waiting_for"), "an approval")
    second = ketch("-p", "two", "--provider", "scripted", "--background", script=[text("no")])
    assert second.returncode == 1
    assert "max_running limit (1)" in second.stderr and "ketch stop" in second.stderr
    assert "Traceback" not in second.stderr
    assert list(ps(ketch)) == [first]
    assert ketch("stop", first).returncode == 0


def test_the_cost_limit_refuses_a_new_run_and_stops_one_going_past_it(ketch: Ketch) -> None:
    # 10 input tokens a response at $100,000 per million: $1.00 a response.
    ketch.config(
        '[models."scripted-model"]\ninput_price = 100000\noutput_price = 0\n'
        "[background]\nmax_cost_usd = 1.5\n"
    )
    first = start(
        ketch, "one", [call("write_file", {"path": "one.txt", "content": "1"}), text("ok")]
    )
    wait_for(lambda: ps(ketch).get(first, {}).get("waiting_for"), "an approval")
    assert ps(ketch)[first]["cost_usd"] == pytest.approx(1.0)
    # A second run may start ($1 < $1.50), but its first response takes the total past it.
    second = start(
        ketch, "two", [call("write_file", {"path": "two.txt", "content": "2"}), text("ok")]
    )
    assert finished(ketch, second) == "failed"
    shown = ketch("sessions", "show", second, "--json").stdout
    assert "max_cost_usd" in shown
    ketch.config(
        '[models."scripted-model"]\ninput_price = 100000\noutput_price = 0\n'
        "[background]\nmax_cost_usd = 1.0\n"
    )
    third = ketch("-p", "three", "--provider", "scripted", "--background", script=[text("no")])
    assert third.returncode == 1 and "max_cost_usd limit ($1.0000)" in third.stderr
    assert ketch("stop", first).returncode == 0


def test_a_run_that_cannot_start_says_why(ketch: Ketch) -> None:
    result = ketch("-p", "hi", "--provider", "nosuchkind", "--background", script=[text("no")])
    assert result.returncode == 1
    assert "could not start" in result.stderr and "nosuchkind" in result.stderr
    assert "Traceback" not in result.stderr
    assert ps(ketch) == {}
    nothing = ketch("-p", "", "--background")
    assert nothing.returncode == 2 and "--background runs a prompt" in nothing.stderr


def test_a_killed_supervisor_takes_its_run_with_it(ketch: Ketch) -> None:
    session = start(
        ketch, "wait", [call("write_file", {"path": "x.txt", "content": "x"}), text("ok")]
    )
    wait_for(lambda: ps(ketch).get(session, {}).get("waiting_for"), "an approval")
    status = status_file(ketch, session)
    os.kill(status["supervisor_pid"], signal.SIGKILL)
    wait_for(lambda: status["worker_pid"] not in processes(), "the worker to end")
    assert state_of(ketch, session) == "gone"
    assert (
        "Cancelled by the user before this call finished"
        in ketch("sessions", "show", session, "--json").stdout
    )


def test_a_run_keeps_the_authority_it_was_started_with(
    ketch: Ketch, repo: Path, tmp_path: Path
) -> None:
    """Detaching widens nothing: a deny rule still denies (no one is asked), and a run
    started with ``--permission-prompt-command`` is answered by that command, not held
    for whoever attaches."""
    ketch.config('[permissions]\ndeny = ["write(denied.txt)"]\n')
    denied = start(
        ketch,
        "write denied.txt",
        [call("write_file", {"path": "denied.txt", "content": "no\n"}), text("refused")],
    )
    # It ends without anyone attaching: an approval would wait for ever.
    assert finished(ketch, denied) == "finished"
    assert not (repo / "denied.txt").exists()
    journal = ketch("sessions", "show", denied, "--json").stdout
    assert "refused" in journal and '"approved": true' not in journal.replace(
        '"approved":true', '"approved": true'
    )

    asked = tmp_path / "asked.jsonl"
    program = tmp_path / "answer.sh"
    program.write_text(f'#!/bin/sh\ncat >> {asked}\necho \'{{"decision": "deny"}}\'\n')
    program.chmod(0o755)
    answered = start(
        ketch,
        "write prompted.txt",
        [call("write_file", {"path": "prompted.txt", "content": "no\n"}), text("told no")],
        "--permission-prompt-command",
        str(program),
    )
    assert finished(ketch, answered) == "finished"
    assert '"tool": "write_file"' in asked.read_text() and "prompted.txt" in asked.read_text()
    assert not (repo / "prompted.txt").exists()
    assert "told no" in ketch("sessions", "show", answered, "--json").stdout


def test_an_attached_person_who_says_no_is_heard(ketch: Ketch, repo: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    session = start(
        ketch,
        "write refused.txt",
        [
            call("write_file", {"path": "refused.txt", "content": "no\n"}),
            text("went on without it"),
        ],
    )
    wait_for(lambda: ps(ketch).get(session, {}).get("waiting_for"), "an approval")
    environ, _ = ketch.script_env([])
    child = pexpect.spawn(
        sys.executable,
        ["-m", "ketch", "attach", session],
        cwd=str(repo),
        env=environ,
        encoding="utf-8",
        dimensions=(40, 140),
        timeout=30,
        use_poll=True,  # fds past 1024 in a long test process
    )
    try:
        child.expect("allow it\\?")
        child.send("n\r")
        child.expect("went on without it")
        child.expect("the background turn ended: end_turn")
        child.expect("Type a request")
        time.sleep(0.5)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert not (repo / "refused.txt").exists()
    assert finished(ketch, session) == "finished"


def test_a_background_run_in_a_worktree_of_its_own(ketch: Ketch, repo: Path) -> None:
    session = start(
        ketch,
        "write bg.txt",
        [call("write_file", {"path": "bg.txt", "content": "in the worktree\n"}), text("ok")],
        "-w",
        "bgtree",
        "--profile",
        "full-access",
    )
    assert finished(ketch, session) == "finished"
    folder = Path(ketch.worktrees()["bgtree"]["path"])
    assert (folder / "bg.txt").read_text() == "in the worktree\n"
    assert not (repo / "bg.txt").exists()
    assert ps(ketch, "--all")[session]["worktree"] == "bgtree"
