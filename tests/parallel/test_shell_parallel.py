"""``/worktree`` and ``/background`` in the interactive shell, in a real terminal (tmux)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ketch.testing import text
from tests.interactive.interactive_kit import Terminal, needs_tmux
from tests.parallel.conftest import git, make_repo, needs_git

pytestmark = [needs_tmux, needs_git]


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[Terminal]:
    repo = make_repo(tmp_path / "proj", {"a.txt": "one\n"})
    terminal = Terminal(
        tmp_path, plugins=None, workspace=repo, script=[text("bg done", when="BGTASK")]
    )
    try:
        terminal.ready()
        yield terminal
    finally:
        terminal.close()


def test_worktree_reopens_the_shell_in_the_worktree(shell: Terminal) -> None:
    shell.type("/worktree feat")
    shell.wait_for("reopening the shell there")
    shell.wait_for("worktree feat (reopened; branch ketch/feat)")
    shell.wait_for("Ctrl-D quits", count=2)
    shell.wait_idle()
    shell.type("/status")
    screen = shell.wait_for("workspace  ")
    line = next(x for x in screen.splitlines()[::-1] if x.startswith("workspace  "))
    folder = Path(line.split()[1])
    assert folder.name == "feat" and folder.parent.parent.name == "worktrees"
    assert "ketch/feat" in git(shell.workspace, "worktree", "list")
    shell.type("/exit")
    assert shell.exit_code() == 0


def test_background_starts_a_run_from_the_shell(shell: Terminal) -> None:
    shell.type("/background BGTASK do it")
    screen = shell.wait_for("in the background: `ketch attach ")
    session = screen.split("started ", 1)[1].split(" ", 1)[0]
    assert session.startswith("ses_")
    state = Path(shell.env["KETCH_STATE_DIR"]) / "background"
    deadline = time.monotonic() + 60
    found: dict = {}
    while time.monotonic() < deadline:
        for path in state.glob("bg_*.json"):
            data = json.loads(path.read_text())
            if data["session_id"] == session:
                found = data
        if found.get("state") == "finished":
            break
        time.sleep(0.2)
    assert found.get("state") == "finished", found
    shell.type("/background")
    shell.wait_for("no background sessions are running")
