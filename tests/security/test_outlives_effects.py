"""No process outlives its command, session or ketch (issue 23, class 5), judged by
effects: after the ``ketch -p`` session of the corpus's ``issue:outlives`` commands (and
after the after phase), no process is left running in the world -- ``setsid``, double
forks, ``nohup``, ``disown`` included -- sandbox on and off.

The process-level tests (signals, SIGKILL, jobs, timeouts) are in
tests/tools/test_shell_containment.py; this is the same promise through the CLI."""

from __future__ import annotations

import subprocess
import time

import pytest
from canaries import World
from corpus import CASES, fill
from runner import CONFIGS, run_cli, survivors

OUTLIVES = [c.command for c in CASES if c.cls == "issue:outlives"]


def test_survivors_sees_a_process_left_in_the_world(world: World) -> None:
    """The control: a detached process with its own session, working in the world, is
    an ``outlived`` effect (and is ended)."""
    proc = subprocess.Popen(["sleep", "397"], cwd=world.workspace, start_new_session=True)
    try:
        found = survivors(world)
        assert [e.kind for e in found] == ["outlived"] and "sleep 397" in found[0].detail
        assert proc.wait(timeout=10) == -9
        assert survivors(world) == []
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize(("profile", "sandbox"), CONFIGS)
def test_no_command_outlives_the_session(world: World, profile: str, sandbox: bool) -> None:
    commands = [fill(c, world) for c in OUTLIVES]
    started = time.monotonic()
    report = run_cli(world, commands, profile=profile, sandbox=sandbox, after=True)
    assert not report.effects, report.describe()
    ran = [o for o in report.outcomes if o.ran]
    if profile == "full-access":
        assert len(ran) == len(commands), [(o.text, o.reason) for o in report.outcomes]
    else:
        assert ran, [(o.text, o.reason) for o in report.outcomes]
    # Each command ends when its shell does: none waits for the sleeps it started.
    assert time.monotonic() - started < 240
