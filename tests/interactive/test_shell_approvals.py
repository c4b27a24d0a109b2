"""Approvals show what they approve: the diff of an edit is on screen, highlighted and
folded to fit an 80x24 terminal, before the key is pressed; ``v`` pages through all
of it; the file is unchanged until the answer, and unchanged after ``n``."""

from __future__ import annotations

from pathlib import Path

import pytest
from interactive_kit import needs_tmux, no_traceback

pytestmark = [needs_tmux, pytest.mark.slow]

PLUGINS = "interactive,fs,policy"


TERMINAL_DEFAULTS = {"plugins": PLUGINS, "width": 80, "height": 24}


def _edit_script(old: str, new: str, answer: str) -> list[dict]:  # type: ignore[type-arg]
    return [
        {"tool_calls": [{"name": "read_file", "input": {"path": "main.py"}}]},
        {
            "tool_calls": [
                {
                    "name": "edit_file",
                    "input": {"path": "main.py", "old_string": old, "new_string": new},
                }
            ]
        },
        {"text": answer},
    ]


def test_edit_diff_is_on_screen_before_the_key_and_n_leaves_the_file(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    original = "import os\n\ndef main():\n    print('hello')\n"
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "ws" / "main.py").write_text(original)
    term = start(script=_edit_script("print('hello')", "print('goodbye')", "left it"))
    term.type("change the greeting")
    screen = term.wait_for("Allow edit_file?")
    question = screen.split("Allow edit_file?")[-1]
    assert "-    print('hello')" in question and "+    print('goodbye')" in question
    assert "@@" in question and "why it asks" in question
    assert (tmp_path / "ws" / "main.py").read_text() == original  # nothing written while asking
    term.keys("n")
    term.wait_for("left it")
    assert (tmp_path / "ws" / "main.py").read_text() == original
    no_traceback(term.screen())


def test_yes_applies_exactly_the_previewed_change(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "ws" / "main.py").write_text("x = 1\n")
    term = start(script=_edit_script("x = 1", "x = 2", "changed it"))
    term.type("bump x")
    screen = term.wait_for("Allow edit_file?")
    assert "+x = 2" in screen.split("Allow edit_file?")[-1]
    term.keys("y")
    term.wait_for("changed it")
    assert (tmp_path / "ws" / "main.py").read_text() == "x = 2\n"


def test_a_long_diff_is_folded_and_v_pages_through_it(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    old = "".join(f"value_{n} = {n}\n" for n in range(60))
    new = "".join(f"value_{n} = {n * 10}\n" for n in range(60))
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "ws" / "main.py").write_text(old)
    term = start(script=_edit_script(old, new, "left the long one"))
    term.type("multiply everything")
    term.wait_for("press v to see all of it")
    visible = term.visible()
    assert "Allow edit_file?" in visible and "Yes, make this change" in visible  # fits 80x24
    assert "-value_1 = 1" in visible and "+value_59 = 590" not in visible
    term.keys("v")
    term.wait_for("back to the question")
    term.keys("End")
    pager = term.wait_for("+value_59 = 590")
    assert "+value_59 = 590" in term.visible(), pager
    term.keys("q")
    term.wait_for("press v to see all of it")
    assert (tmp_path / "ws" / "main.py").read_text() == old
    term.keys("n")
    term.wait_for("left the long one")
    assert (tmp_path / "ws" / "main.py").read_text() == old
