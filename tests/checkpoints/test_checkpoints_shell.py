"""Undo, redo and rewind in the interactive shell, in a real terminal (tmux): the turn
footer says what an undo would revert, /undo and /redo move the files, a file the
person changed is asked about, and /rewind lists the turns, restores the conversation
and puts the turn's prompt back in the input box."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.checkpoints.kit import ORIGINAL, PLUGINS, acceptance_script, files_of, make_workspace
from tests.interactive.interactive_kit import Terminal, needs_tmux, no_traceback

pytestmark = [needs_tmux, pytest.mark.slow]
SHELL_PLUGINS = ",".join(["interactive", *[p for p in PLUGINS if p != "headless"]])


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[Any]:
    opened: list[Terminal] = []

    def start(script: list[dict[str, Any]]) -> Terminal:
        ws = make_workspace(tmp_path)
        term = Terminal(
            tmp_path,
            script=script,
            plugins=SHELL_PLUGINS,
            workspace=ws,
            args=("--profile", "full-access"),
        )
        opened.append(term)
        term.ready()
        return term

    yield start
    for term in opened:
        term.close()


def test_undo_and_redo_in_the_shell_with_the_footer_saying_so(shell: Any) -> None:
    term = shell([*acceptance_script()])
    ws = term.workspace
    before = files_of(ws)
    term.type("change four files")
    screen = term.wait_for("4 files changed (/undo reverts them)")
    term.wait_idle()
    after = files_of(ws)
    assert after != before and "old.log" not in after

    term.type("/undo")
    screen = term.wait_for("(/redo puts them back)")
    assert "undid turn 1 ('change four files')" in screen
    for line in (
        "recreated            old.log",
        "rewritten            tool.sh",
        "rewritten            notes.md",
        "rewritten            src/config.py",
    ):
        assert line in screen, line
    term.wait_idle()
    assert files_of(ws) == before
    for rel, (data, mode) in ORIGINAL.items():
        assert (ws / rel).read_bytes() == data and (ws / rel).stat().st_mode & 0o7777 == mode

    term.type("/redo")
    term.wait_for("redid turn 1")
    term.wait_idle()
    assert files_of(ws) == after
    no_traceback(term.screen())


def test_undo_asks_about_a_file_the_person_changed(shell: Any) -> None:
    term = shell([*acceptance_script()])
    ws = term.workspace
    before = files_of(ws)
    term.type("change four files")
    term.wait_for("4 files changed")
    term.wait_idle()
    (ws / "tool.sh").write_text("#!/bin/sh\necho mine\n")
    term.type("/undo")
    term.wait_for("tool.sh: changed since ketch's turn, by you or another program.")
    term.wait_for("Keep it as it is")
    term.keys("2")  # keep mine
    screen = term.wait_for("(/redo puts them back)")
    assert "left alone           tool.sh" in screen
    term.wait_idle()
    now = files_of(ws)
    assert (ws / "tool.sh").read_text() == "#!/bin/sh\necho mine\n"
    assert {k: v for k, v in now.items() if k != "tool.sh"} == {
        k: v for k, v in before.items() if k != "tool.sh"
    }


def test_rewind_lists_turns_and_puts_the_prompt_back(shell: Any) -> None:
    term = shell(
        [
            {"text": "first answer"},
            {"tool_calls": [{"name": "shell", "input": {"command": "echo two > two.txt"}}]},
            {"text": "second answer"},
            {"text": "third answer"},
        ]
    )
    ws = term.workspace
    term.type("prompt one")
    term.wait_for("first answer")
    term.wait_idle()
    term.type("prompt two")
    term.wait_for("1 file changed (/undo reverts it)")
    term.wait_idle()
    assert (ws / "two.txt").exists()

    term.type("/rewind")
    screen = term.wait_for("Rewind to before which turn?")
    assert "prompt two  (1 file changed)" in screen and "prompt one  (no file changes)" in screen
    term.keys("1")  # the newest first: turn 2
    term.wait_for("Restore code and conversation")
    term.keys("1")
    screen = term.wait_for("the turn's prompt is back in the input box")
    assert "removed              two.txt" in screen
    assert not (ws / "two.txt").exists()
    term.wait_for("❯ prompt two")  # in the input box, for the person to edit and send
    term.keys("C-u")
    term.type("prompt three")
    term.wait_for("third answer")
    term.wait_idle()
    last = term.requests()[-1]
    users = [
        "".join(p.get("text", "") for p in m["parts"])
        for m in last["messages"]
        if m["role"] == "user"
    ]
    assert users == ["prompt one", "prompt three"]
    no_traceback(term.screen())
