"""shell and shell_job: timeouts and cancel kill the whole group, output stays in budget,
secrets stay out of the child's environment, the sandbox hook is called."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from ketch_tools_testkit import Recorder, alive

from ketch import hookimpl
from ketch.testing import approve_all, call, text

FAST = {"shell": {"kill_grace": 0.5}}


def wait_for_file(path: Path, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.02)
    raise AssertionError(f"{path} was never written")


def test_runs_in_the_workspace_and_reports_exit_code(tools) -> None:
    session = tools()
    (session.workspace / "sub").mkdir()
    ok = session.call("shell", {"command": "pwd; echo err >&2"})
    assert ok.ok
    assert ok.output.splitlines() == [str(session.workspace.resolve()), "err", "[exit code 0]"]
    sub = session.call("shell", {"command": "pwd", "cwd": "sub"})
    assert sub.output.splitlines()[0] == str((session.workspace / "sub").resolve())
    failed = session.call("shell", {"command": "echo nope; exit 3"})
    assert not failed.ok and failed.output.endswith("[exit code 3]")
    quiet = session.call("shell", {"command": "true"})
    assert quiet.output == "(no output)\n[exit code 0]"


def test_the_full_command_line_is_what_the_user_approves(tools) -> None:
    recorder = Recorder()
    session = tools(approver=recorder)
    command = "echo one && echo two; ls -la | wc -l  # " + "x" * 300
    session.call("shell", {"command": command})
    (request,) = recorder.requests
    assert request.summary == command
    (access,) = request.call.accesses
    assert access.target == command and access.effect == "execute"
    assert access.detail["cwd"] == str(session.workspace.resolve())


def test_cwd_outside_the_workspace_is_refused(tools, tmp_path: Path) -> None:
    session = tools()
    for cwd in ("..", str(tmp_path), "../ws-evil"):
        result = session.call("shell", {"command": "pwd", "cwd": cwd})
        assert not result.ok and "outside the workspace" in result.output


def test_ten_megabytes_of_output_are_cut_to_head_and_tail(tools) -> None:
    session = tools(settings={"shell": {"max_output_chars": 4000, "max_output_lines": 1000}})
    started = time.monotonic()
    result = session.call("shell", {"command": "seq 1 1500000"})  # about 10.9 MB
    assert result.ok
    assert time.monotonic() - started < 30
    lines = result.output.splitlines()
    assert lines[0] == "1" and lines[-1] == "[exit code 0]" and lines[-2] == "1500000"
    assert len(result.output) < 4500
    note = next(line for line in lines if line.startswith("[... "))
    assert "bytes (" in note and "lines) cut from the middle of the output" in note


def test_line_cap_keeps_head_and_tail(tools) -> None:
    session = tools(settings={"shell": {"max_output_lines": 20}})
    result = session.call("shell", {"command": "seq 1 100"})
    lines = result.output.splitlines()
    assert lines[:3] == ["1", "2", "3"] and "lines cut from the middle" in result.output
    assert lines[-2] == "100"


def test_escape_sequences_and_progress_redraws_are_cleaned(tools) -> None:
    session = tools()
    result = session.call("shell", {"command": r"printf '\033[31mred\033[0m\n10%%\r50%%\r100%%\n'"})
    assert result.output.splitlines()[:2] == ["red", "100%"]


def test_command_that_never_ends_is_killed_at_the_timeout(tools, tmp_path: Path) -> None:
    session = tools(settings=FAST)
    pidfile = tmp_path / "pid"
    started = time.monotonic()
    result = session.call(
        "shell", {"command": f"sleep 1000 & echo $! > {pidfile}; wait", "timeout": 1}
    )
    elapsed = time.monotonic() - started
    assert not result.ok and "timed out after 1 s" in result.output
    assert elapsed < 10
    assert not alive(int(pidfile.read_text()))


def test_child_ignoring_sigterm_is_killed(tools, tmp_path: Path) -> None:
    session = tools(settings=FAST)
    pidfile = tmp_path / "pid"
    command = f"""{sys.executable} -c 'import signal, time, os; signal.signal(signal.SIGTERM, signal.SIG_IGN); open("{pidfile}", "w").write(str(os.getpid())); time.sleep(1000)' & wait"""
    result = session.call("shell", {"command": command, "timeout": 2})
    assert "timed out" in result.output
    assert not alive(int(pidfile.read_text()))


def test_processes_left_behind_are_stopped(tools, tmp_path: Path) -> None:
    session = tools(settings=FAST)
    pidfile = tmp_path / "pid"
    started = time.monotonic()
    result = session.call(
        "shell", {"command": f"nohup sleep 1000 >/dev/null 2>&1 & echo $! > {pidfile}; echo done"}
    )
    assert result.ok and "done" in result.output
    assert "left processes running; they were stopped" in result.output
    assert time.monotonic() - started < 10
    assert not alive(int(pidfile.read_text()))


def test_cancelling_the_turn_kills_the_process_group(tools, tmp_path: Path) -> None:
    session = tools(settings=FAST)
    harness = session.harness
    pidfile = tmp_path / "pid"
    command = f"""{sys.executable} -c 'import signal, time, os; signal.signal(signal.SIGTERM, signal.SIG_IGN); open("{pidfile}", "w").write(str(os.getpid())); time.sleep(1000)' & sleep 1000"""
    harness.provider.add(call("shell", {"command": command, "timeout": 600}), text("never reached"))

    async def scenario() -> Any:
        task = asyncio.create_task(harness.turn("run it", approver=approve_all))
        while not (pidfile.exists() and pidfile.read_text()):
            await asyncio.sleep(0.02)
        task.cancel()
        return await task

    end = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert end.stop_reason == "cancelled"
    deadline = time.monotonic() + 5
    pid = int(pidfile.read_text())
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)


def test_canary_api_key_is_absent_from_env(tools, monkeypatch: pytest.MonkeyPatch) -> None:
    canary = "sk-canary-4f1e9b2c7d"
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    monkeypatch.setenv("MY_SERVICE_TOKEN", canary + "-token")
    monkeypatch.setenv("DB_PASSWORD", canary + "-pw")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", canary + "-aws")
    monkeypatch.setenv("BASH_ENV", "/tmp/evil-bash-env")
    monkeypatch.setenv("HARMLESS_SETTING", "not-on-the-list")
    monkeypatch.setenv("DATABASE_URL", f"postgres://app:{canary}-db@db/app")
    monkeypatch.setenv("MYSQL_PWD", canary + "-mysql")
    monkeypatch.setenv("HTTP_PROXY", f"http://me:{canary}-proxy@proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "localhost")
    monkeypatch.setenv("LC_TIME", "C.UTF-8")
    monkeypatch.setenv("VIRTUAL_ENV", "/opt/venv")
    session = tools()
    result = session.call("shell", {"command": "env"})
    assert result.ok
    assert canary not in result.output
    assert "BASH_ENV" not in result.output
    assert "HARMLESS_SETTING" not in result.output, "an allow-list, not a deny-list"
    assert "HTTP_PROXY" not in result.output, "a proxy URL with a password is left out"
    for kept in (
        "NO_PROXY=localhost",
        "LC_TIME=C.UTF-8",
        "VIRTUAL_ENV=/opt/venv",
        "PATH=",
        "HOME=",
    ):
        assert kept in result.output
    assert "GIT_PAGER=cat" in result.output


def test_env_allow_adds_names_and_globs(tools, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYAPP_MODE", "dev")
    monkeypatch.setenv("MYAPP_LEVEL", "3")
    monkeypatch.setenv("AWS_PROFILE", "work")
    monkeypatch.setenv("OTHER_SETTING", "hidden")
    monkeypatch.setenv("LD_PRELOAD", "/tmp/evil.so")
    session = tools(config='[shell]\nenv_allow = ["MYAPP_*", "AWS_PROFILE", "LD_PRELOAD"]\n')
    output = session.call("shell", {"command": "env"}).output
    assert "MYAPP_MODE=dev" in output and "MYAPP_LEVEL=3" in output and "AWS_PROFILE=work" in output
    assert "OTHER_SETTING" not in output
    assert "LD_PRELOAD" not in output, "what changes programs is never passed"


def test_env_passthrough_comes_from_the_user_shell_table(
    tools, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-allowed")
    monkeypatch.setenv("OTHER_TOKEN", "still-hidden")
    session = tools(config='[shell]\nenv_passthrough = ["GITHUB_*"]\n')
    output = session.call("shell", {"command": "env"}).output
    assert "GITHUB_TOKEN=ghp-allowed" in output and "still-hidden" not in output


def test_workspace_config_cannot_pass_secrets_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ketch_tools_testkit import TOOL_PLUGINS, ToolSession

    from ketch.testing import Harness

    monkeypatch.setenv("GITHUB_TOKEN", "ghp-must-not-leak")
    harness = Harness.create(
        tmp_path,
        bundled=TOOL_PLUGINS,
        workspace_config='[shell]\nenv_passthrough = ["*"]\nenv_allow = ["*"]\n[tools.shell]\nenv_passthrough = ["*"]\n',
    )
    session = ToolSession(harness, approve_all)
    output = session.call("shell", {"command": "env"}).output
    assert "ghp-must-not-leak" not in output
    notices = [e.message for e in session.events("notice")]
    assert any("[tools.shell] env_passthrough is ignored" in n for n in notices)


class SandboxRecorder:
    def __init__(self) -> None:
        self.calls: list[tuple[list[str], Path, bool]] = []

    @hookimpl
    def sandbox_command(self, argv: list[str], workspace: Path, network: bool) -> list[str]:
        self.calls.append((list(argv), workspace, network))
        return ["env", "SANDBOXED=yes", *argv]


def test_sandbox_hook_wraps_every_command(tools) -> None:
    sandbox = SandboxRecorder()
    session = tools(plugins=[("test-sandbox", sandbox)])
    result = session.call("shell", {"command": "echo $SANDBOXED"})
    assert result.output.splitlines()[0] == "yes"
    # The approval's preview asks the same hook first (to say whether it is sandboxed).
    assert len(sandbox.calls) == 2 and sandbox.calls[0] == sandbox.calls[1]
    argv, workspace, network = sandbox.calls[-1]
    assert (
        argv[1:] == ["-c", "echo $SANDBOXED"]
        and workspace == session.workspace.resolve()
        and network is False
    )
    session.call("shell", {"command": "echo bg", "background": True})
    assert len(sandbox.calls) == 4


class BrokenSandbox:
    @hookimpl
    def sandbox_command(self, argv: list[str], workspace: Path, network: bool) -> list[str]:
        raise RuntimeError("bwrap exploded")


def test_a_failing_sandbox_means_not_run(tools, tmp_path: Path) -> None:
    session = tools(plugins=[("broken-sandbox", BrokenSandbox())])
    marker = tmp_path / "ran"
    result = session.call("shell", {"command": f"touch {marker}"})
    assert not result.ok and "sandbox" in result.output and not marker.exists()


def test_background_job_start_read_stop(tools, tmp_path: Path) -> None:
    session = tools(settings={"shell": {"kill_grace": 0.5, "job_start_wait": 0.2}})
    pidfile = tmp_path / "job.pid"
    script = f"echo $$ > {pidfile}; echo ready; while true; do read line < {tmp_path}/fifo && echo got $line; done"
    os.mkfifo(tmp_path / "fifo")
    started = session.call("shell", {"command": script, "background": True})
    assert started.ok and "Started job" in started.output
    job_id = int(started.output.split("Started job ")[1].split()[0])
    pid = int(wait_for_file(pidfile))
    with open(tmp_path / "fifo", "w") as fifo:
        fifo.write("hello\n")
    seen = started.output
    deadline = time.monotonic() + 10
    while "got hello" not in seen and time.monotonic() < deadline:
        read = session.call("shell_job", {"action": "read", "job_id": job_id, "wait": 2})
        assert read.ok and f"job {job_id}: running" in read.output
        seen += read.output
    assert "ready" in seen and "got hello" in seen
    again = session.call("shell_job", {"action": "read", "job_id": job_id})
    assert "(no new output)" in again.output and "running" in again.output
    listing = session.call("shell_job", {"action": "list"})
    assert f"job {job_id}: running" in listing.output
    stopped = session.call("shell_job", {"action": "stop", "job_id": job_id})
    assert stopped.ok and "Stopped" in stopped.output
    assert not alive(pid)
    missing = session.call("shell_job", {"action": "read", "job_id": 9999})
    assert not missing.ok and "no job 9999" in missing.output


def test_jobs_are_stopped_when_the_session_ends(tools, tmp_path: Path) -> None:
    session = tools(settings={"shell": {"job_start_wait": 0}})
    pidfile = tmp_path / "pid"
    session.call("shell", {"command": f"echo $$ > {pidfile}; exec sleep 1000", "background": True})
    pid = int(wait_for_file(pidfile))
    assert alive(pid)
    session.harness.kernel.end(session.harness.session, "exit")
    assert not alive(pid)


def test_job_output_buffer_is_bounded(tools, tmp_path: Path) -> None:
    session = tools(
        settings={
            "shell": {"job_buffer_bytes": 10_000, "job_start_wait": 0, "max_output_chars": 2000}
        }
    )
    started = session.call("shell", {"command": "seq 1 200000; echo finished", "background": True})
    job_id = int(started.output.split("Started job ")[1].split()[0])
    time.sleep(0.5)
    deadline = time.monotonic() + 10
    while (
        "exited" not in session.call("shell_job", {"action": "list"}).output
        and time.monotonic() < deadline
    ):
        time.sleep(0.1)
    output = session.call("shell_job", {"action": "read", "job_id": job_id}).output
    assert "exited with code 0" in output
    assert "older bytes were dropped unread" in output and output.rstrip().endswith("finished")
    assert len(output) < 3000


# Nothing a command started outlives it, its session or ketch (signals, SIGKILL, setsid,
# double forks, sandbox on and off): tests/tools/test_shell_containment.py.


def test_a_running_command_streams_its_lines_through_the_result_filters(tools) -> None:
    # Issue 26: live output. Lines reach the frontends while the command runs, as
    # ``tool_output`` events, redacted like the result is (the redact plugin is loaded).
    from ketch_tools_testkit import ToolSession

    from ketch.testing import Harness

    session = ToolSession(
        Harness.create(tools().workspace.parent, bundled=["shell", "redact"]), approve_all
    )
    token = "ghp_" + "a1B2c3D4" * 4 + "e5F6"
    result = session.call(
        "shell", {"command": f"echo first; sleep 0.6; echo 'token {token}'; sleep 0.6; echo last"}
    )
    assert result.ok and token not in result.output
    chunks = session.events("tool_output")
    assert len(chunks) >= 2  # more than one update: it was live, not all at the end
    assert all(c.tool_call_id == result.tool_call_id and c.name == "shell" for c in chunks)
    shown = "\n".join(c.text for c in chunks)
    assert shown.startswith("first") and shown.rstrip().endswith("last")
    assert token not in shown and "REDACTED" in shown
    assert chunks[0].ts < result.ts - 0.5  # the first line came well before the end
