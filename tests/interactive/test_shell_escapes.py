"""The shell shows escape sequences from the model, it does not obey them: an answer with
OSC 0 (window title), OSC 52 (clipboard) and CSI 2J (clear screen), and an unknown tool
whose name carries them, leave the pane's title and the scrollback as they were."""

from __future__ import annotations

import pytest
from interactive_kit import needs_tmux, no_traceback

pytestmark = [needs_tmux, pytest.mark.slow]

TITLE = "\x1b]0;pwned-title\x07"
CLIPBOARD = "\x1b]52;c;ZXZpbA==\x07"
CLEAR = "\x1b[2J\x1b[H"


def test_escapes_from_the_model_are_shown_not_obeyed(start) -> None:  # type: ignore[no-untyped-def]
    term = start(
        script=[
            {"text": "first answer, still on screen"},
            {"tool_calls": [{"name": f"evil{TITLE}{CLEAR}", "input": {}}]},
            {"text": f"second {TITLE}{CLIPBOARD}{CLEAR}answer"},
        ]
    )
    title = term._tmux("display-message", "-p", "-t", "main", "#{pane_title}").strip()
    term.type("one")
    term.wait_for("first answer, still on screen")
    term.wait_idle()
    term.type("two")
    term.wait_for("answer", count=2)
    screen = term.wait_idle()
    no_traceback(screen)
    assert term._tmux("display-message", "-p", "-t", "main", "#{pane_title}").strip() == title
    assert "pwned-title" in screen  # shown, escaped
    assert "first answer, still on screen" in term.visible()  # the screen was not cleared
    assert "\x1b]" not in term.escapes()
