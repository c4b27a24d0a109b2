"""Issue 26: the shell after a week of daily use. Each test here failed on the shell
before the fix it names; all of them drive ``ketch`` in a real terminal (tmux)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from interactive_kit import needs_tmux, no_traceback

pytestmark = [needs_tmux, pytest.mark.slow]


def _stops_within_a_second(term) -> float:  # type: ignore[no-untyped-def]
    """Run ``!sleep 100``, press Ctrl-C once it runs, and return how long it took to stop."""
    term.type("!sleep 100")
    term.wait_for("$ sleep 100")
    time.sleep(0.3)  # the command is running, no prompt is open
    pressed = time.monotonic()
    term.keys("C-c")
    term.wait_for("⏹ cancelled", timeout=10)
    took = time.monotonic() - pressed
    term.wait_idle()
    return took


def test_ctrl_c_stops_a_bang_command_after_an_approval(start) -> None:  # type: ignore[no-untyped-def]
    # Item 1: the approval's prompt_toolkit application removed the shell's SIGINT handler.
    term = start(
        script=[
            {"tool_calls": [{"name": "mark", "input": {"name": "a.txt"}}]},
            {"text": "marked"},
        ]
    )
    term.type("mark a.txt")
    term.wait_for("Allow mark?")
    term.keys("y")
    term.wait_for("marked")
    term.wait_idle()
    assert _stops_within_a_second(term) < 1.0
    no_traceback(term.screen())


def test_ctrl_c_stops_a_bang_command_after_the_pager(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    old = "".join(f"value_{n} = {n}\n" for n in range(60))
    new = "".join(f"value_{n} = {n * 10}\n" for n in range(60))
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "ws" / "main.py").write_text(old)
    term = start(
        plugins="interactive,fs,policy",
        width=80,
        height=24,
        script=[
            {"tool_calls": [{"name": "read_file", "input": {"path": "main.py"}}]},
            {
                "tool_calls": [
                    {
                        "name": "edit_file",
                        "input": {"path": "main.py", "old_string": old, "new_string": new},
                    }
                ]
            },
            {"text": "left it"},
        ],
    )
    term.type("multiply")
    term.wait_for("press v to see all of it")
    term.keys("v")
    term.wait_for("back to the question")
    term.keys("q")
    term.wait_for("press v to see all of it")
    term.keys("n")
    term.wait_for("left it")
    term.wait_idle()
    assert _stops_within_a_second(term) < 1.0
