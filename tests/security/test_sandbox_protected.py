"""Protected paths in the sandbox (issue 23 item 3), by what a real sandboxed command can
and cannot do, and what is left in the workspace afterwards.

* absent protected names at the workspace root (and a repository's hooks directory,
  its config includes, what configured hooks run) are reserved while commands run:
  they cannot create them, and nothing of the reservations is left once the last
  command that held them ends, however many overlapped, unless someone outside put
  something into one;
* a protected name made anywhere else (``git init`` in a subdirectory, ``.vscode``
  three levels down, a link) is moved to quarantine once the command has ended, and
  the result says so, one line each; what a tool the person authorized wrote meanwhile
  is left alone;
* a protected name that is a link keeps its target read-only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from runner import needs_sandbox

from ketch.testing import Harness, approve_all

pytestmark = needs_sandbox

ROOT = (".git", ".ketch", ".claude", ".vscode", ".idea", ".husky", ".envrc", ".gitconfig", ".mcp.json")  # fmt: skip


def make(tmp_path: Path, config: str = "", git: bool = True) -> tuple[Harness, Any]:
    from ketch_tools_testkit import ToolSession

    harness = Harness.create(
        tmp_path,
        bundled=["fs", "shell", "sandbox", "guards"],
        config="[sandbox]\nenabled = true\n" + config,
        settings={"profile": "full-access"},
    )
    assert harness.session.snapshot().facts.get("sandboxed") is True
    if git:
        subprocess.run(["git", "init", "-q", str(harness.workspace)], check=True)
    return harness, ToolSession(harness, approve_all)


@pytest.fixture(autouse=True)
def _testkit_on_path() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))


def listing(ws: Path) -> list[str]:
    return sorted(os.listdir(ws))


def test_absent_root_names_cannot_be_created_and_leave_nothing(tmp_path: Path) -> None:
    harness, tools = make(tmp_path, git=False)
    ws = harness.workspace
    before = listing(ws)
    attempts = "; ".join(
        f"mkdir -p {n}/x 2>/dev/null || echo blocked-{n}; echo x > {n}/f 2>/dev/null || true"
        for n in ROOT
    )
    result = tools.call(
        "shell", {"command": attempts + "; git init -q . 2>/dev/null || echo no-git-init"}
    )
    for name in ROOT:
        assert f"blocked-{name}" in result.output, (name, result.output)
    assert "no-git-init" in result.output
    assert listing(ws) == before, "every reservation removed when the command ended"


def test_a_reservation_someone_filled_from_outside_is_theirs(tmp_path: Path) -> None:
    harness, tools = make(tmp_path)
    ws = harness.workspace
    marker = ws / "go"  # the host's /tmp is not the sandbox's
    command = f"while [ ! -e {marker} ]; do sleep 0.05; done; echo done"
    started = tools.call("shell", {"command": command, "background": True})
    assert "Started job" in started.output
    deadline = time.monotonic() + 10
    while not (ws / ".vscode").is_dir() and time.monotonic() < deadline:
        time.sleep(0.02)
    (ws / ".vscode" / "settings.json").write_text("{}")  # the person's editor, on the host
    marker.touch()
    harness.kernel.end(harness.session, "exit")
    assert (ws / ".vscode" / "settings.json").read_text() == "{}"
    assert not (ws / ".idea").exists()


def test_overlapping_commands_share_reservations(tmp_path: Path) -> None:
    """A background job holds the reservations while a foreground command comes and
    goes: the job still cannot create them afterwards, and at the end nothing is left."""
    harness, tools = make(tmp_path)
    ws = harness.workspace
    marker = ws / "go"  # the host's /tmp is not the sandbox's
    job = (
        f"while [ ! -e {marker} ]; do sleep 0.05; done; "
        "mkdir .claude/x 2>/dev/null && echo created || echo still-blocked"
    )
    started = tools.call("shell", {"command": job, "background": True})
    job_id = int(started.output.split("Started job ")[1].split()[0])
    assert tools.call("shell", {"command": "ls -a"}).ok
    assert (ws / ".claude").is_dir(), "still reserved: the job runs"
    marker.touch()
    read = tools.call("shell_job", {"action": "read", "job_id": job_id, "wait": 10})
    assert "still-blocked" in read.output
    harness.kernel.end(harness.session, "exit")
    assert listing(ws) == [".git", "go"]


def test_a_killed_ketchs_reservations_are_swept(tmp_path: Path) -> None:
    from ketch_sandbox import reserve

    harness, _tools = make(tmp_path)
    ws = harness.workspace
    left = ws / ".vscode"
    left.mkdir()
    info = left.stat()
    with reserve._ledger() as entries:
        entries[str(left)] = {
            "ident": [info.st_dev, info.st_ino],
            "holders": ["999999999:1"],
            "file": False,
        }
    reserve.sweep()
    assert not left.exists()


def test_planted_elsewhere_is_moved_to_quarantine(tmp_path: Path) -> None:
    harness, tools = make(tmp_path)
    ws = harness.workspace
    (ws / "docs").mkdir()
    (ws / "elsewhere").mkdir()
    result = tools.call(
        "shell",
        {
            "command": "git init -q lib/inner && mkdir -p a/b/.vscode && echo x > a/b/.vscode/tasks.json "
            "&& ln -s ../elsewhere docs/.claude && echo 'gitdir: /tmp' > docs/.git && echo ok"
        },
    )
    assert "ok" in result.output
    for rel in ("lib/inner/.git", "a/b/.vscode", "docs/.claude", "docs/.git"):
        assert not os.path.lexists(ws / rel), rel
        assert f"[sandbox] the command created {rel} (" in result.output, result.output
    lines = [
        line
        for line in result.output.splitlines()
        if line.startswith("[sandbox] the command created")
    ]
    assert len(lines) == 4, "one line each (a/b/.vscode, not its file too)"
    where = Path(lines[0].split("moved out of the workspace to ")[1].split(" -- ")[0])
    assert os.path.lexists(where) and not where.is_relative_to(ws)
    assert (ws / "lib").is_dir() and (ws / "a" / "b").is_dir(), "the rest of the work stays"


def test_what_an_authorized_tool_wrote_meanwhile_is_left_alone(tmp_path: Path) -> None:
    harness, tools = make(tmp_path)
    ws = harness.workspace
    marker = ws / "go"  # the host's /tmp is not the sandbox's
    started = tools.call(
        "shell", {"command": f"while [ ! -e {marker} ]; do sleep 0.05; done", "background": True}
    )
    assert "Started job" in started.output
    wrote = tools.call("write_file", {"path": "sub/.vscode/settings.json", "content": "{}"})
    assert wrote.ok, wrote.output
    marker.touch()
    harness.kernel.end(harness.session, "exit")
    assert (ws / "sub" / ".vscode" / "settings.json").read_text() == "{}"


def test_a_protected_link_keeps_its_target_read_only(tmp_path: Path) -> None:
    harness, tools = make(tmp_path)
    ws = harness.workspace
    (ws / "config" / "vscode").mkdir(parents=True)
    (ws / "config" / "vscode" / "tasks.json").write_text("{}")
    (ws / ".vscode").symlink_to("config/vscode")
    result = tools.call(
        "shell", {"command": "echo planted > config/vscode/tasks.json; cat .vscode/tasks.json"}
    )
    assert "Read-only file system" in result.output
    assert (ws / "config" / "vscode" / "tasks.json").read_text() == "{}"
    # The link itself is replaced: moved away once the command ends.
    result = tools.call("shell", {"command": "ln -sfn src .vscode; echo replaced"})
    assert "[sandbox] the command created .vscode (" in result.output
    assert not os.path.lexists(ws / ".vscode")


def test_configured_scripts_hooks_directory_and_includes_are_read_only(tmp_path: Path) -> None:
    config = (
        f'[[hooks.Stop]]\ncommand = "{sys.executable} scripts/verify.py"\n'
        f'[mcp_servers.s]\ncommand = "{sys.executable}"\nargs = ["tools/server.py"]\n'
    )
    harness, tools = make(tmp_path, config)
    ws = harness.workspace
    subprocess.run(["git", "-C", str(ws), "config", "core.hooksPath", "githooks"], check=True)
    subprocess.run(
        ["git", "-C", str(ws), "config", "include.path", "../team.gitconfig"], check=True
    )
    (ws / "scripts").mkdir()
    (ws / "scripts" / "verify.py").write_text("print('ok')\n")
    result = tools.call(
        "shell",
        {
            "command": "for f in scripts/verify.py tools/server.py githooks/pre-commit team.gitconfig; do "
            "mkdir -p $(dirname $f); echo planted > $f 2>/dev/null && echo wrote-$f; done; git status --short; echo end"
        },
    )
    assert "wrote-" not in result.output, result.output
    assert "fatal" not in result.output, "git still reads its config (the include is an empty file)"
    assert (ws / "scripts" / "verify.py").read_text() == "print('ok')\n"
    harness.kernel.end(harness.session, "exit")
    for rel in ("tools", "githooks", "team.gitconfig"):
        assert not (ws / rel).exists(), rel


def test_the_quarantine_report_survives_a_failed_command(tmp_path: Path) -> None:
    harness, tools = make(tmp_path)
    result = tools.call("shell", {"command": "mkdir -p x/.idea && exit 3"})
    assert not result.ok
    assert "[sandbox] the command created x/.idea (" in result.output
    assert json.loads(json.dumps(result.output))


def test_a_reservation_goes_when_its_last_holder_lets_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ketch_sandbox import reserve

    monkeypatch.setenv("KETCH_STATE_DIR", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    ws.mkdir()
    first = reserve.reserve([ws / ".vscode", ws / "deep" / "hooks"], files=[ws / "deep" / "hooks"])
    again = reserve.reserve([ws / ".vscode"])
    assert (ws / ".vscode").is_dir() and (ws / "deep" / "hooks").is_file()
    first.release()
    assert (ws / ".vscode").is_dir(), "still held by the second command"
    assert not (ws / "deep").exists(), "gone at once, and the parent made for it too"
    again.release()
    assert os.listdir(ws) == []
    assert json.loads((tmp_path / "state" / reserve.LEDGER_NAME).read_text()) == {}


def test_reservations_still_held_when_ketch_exits_are_given_back(tmp_path: Path) -> None:
    """A process that exits while commands hold reservations (several, removed side by
    side) gives them back on its way out: nothing left, no traceback, the ledger empty."""
    from ketch_sandbox import reserve

    ws = tmp_path / "ws"
    ws.mkdir()
    state = tmp_path / "state"
    program = (
        "import sys\nfrom pathlib import Path\nfrom ketch_sandbox.reserve import reserve\n"
        "ws = Path(sys.argv[1])\n"
        "claim = reserve([ws / '.claude', ws / '.vscode', ws / '.idea'])\n"
        "print(sorted(p.name for p in ws.iterdir()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, str(ws)],
        env={**os.environ, "KETCH_STATE_DIR": str(state)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.strip() == "['.claude', '.idea', '.vscode']", done.stderr
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert os.listdir(ws) == []
    assert json.loads((state / reserve.LEDGER_NAME).read_text()) == {}
