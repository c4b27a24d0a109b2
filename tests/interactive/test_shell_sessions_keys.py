"""In a real terminal: /sessions, /resume (a picker: name, age, first prompt), /rename,
/diff; and the keys: Shift-Tab plan/build, Esc Esc edits the previous prompt, Ctrl-R
searches the history."""

from __future__ import annotations

from pathlib import Path

import pytest
from interactive_kit import message_texts, needs_tmux, no_traceback

pytestmark = [needs_tmux, pytest.mark.slow]


def test_sessions_rename_and_resume_picker(start) -> None:  # type: ignore[no-untyped-def]
    term = start(
        plugins="interactive,crypto,store",
        script=[{"text": "answer alpha"}, {"text": "answer beta"}, {"text": "back in alpha"}],
    )
    term.type("first prompt alpha")
    term.wait_for("answer alpha")
    term.wait_idle()
    term.type("/rename alpha-work")
    term.wait_for("session renamed: alpha-work")
    term.wait_idle()
    term.type("/clear")
    term.wait_for("new session")
    term.wait_idle()
    term.type("second prompt beta")
    term.wait_for("answer beta")
    term.wait_idle()
    term.type("/sessions")
    screen = term.wait_for("alpha-work · just now · first prompt alpha")
    assert "(no name) · just now · second prompt beta" in screen
    term.wait_idle()
    term.type("/resume")
    screen = term.wait_for("Resume which session?")
    assert "alpha-work · just now · first prompt alpha" in screen.split("Resume which session?")[-1]
    assert (
        "second prompt beta" not in screen.split("Resume which session?")[-1]
    )  # not the one we are in
    term.keys("Enter")
    term.wait_for("you: first prompt alpha")
    term.wait_idle()
    term.type("and now?")
    term.wait_for("back in alpha")
    texts = [t for r, t in message_texts(term.requests()[-1]) if r in ("user", "assistant")]
    assert texts == ["first prompt alpha", "answer alpha", "and now?"]
    no_traceback(term.screen())


def test_diff_shows_what_the_session_changed(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    script = [
        {
            "tool_calls": [
                {
                    "name": "write_file",
                    "input": {"path": "new.py", "content": "print('made by the session')\n"},
                }
            ]
        },
        {"text": "created it"},
    ]
    term = start(plugins="interactive,fs,policy", script=script)
    term.type("/diff")
    term.wait_for("no file changes")
    term.wait_idle()
    term.type("make new.py")
    term.wait_for("Allow write_file?")
    term.keys("y")
    term.wait_for("created it")
    term.wait_idle()
    term.type("/diff")
    screen = term.wait_for("file(s) changed this session")
    after = screen.split("/diff")[-1]
    assert "new.py  +1 -0" in after and "+print('made by the session')" in after
    assert "1 file(s) changed this session: +1 -0 lines" in after


def test_shift_tab_toggles_plan_and_build(start) -> None:  # type: ignore[no-untyped-def]
    term = start(plugins="interactive,fs,policy", script=[{"text": "planned"}, {"text": "built"}])
    term.keys("BTab")
    term.wait_for("· mode plan")
    term.wait_for("plan · manual · context")
    term.type("plan it")
    term.wait_for("planned")
    offered = [t["name"] for t in term.requests()[0]["tools"]]
    assert "read_file" in offered and "write_file" not in offered
    term.wait_idle()
    term.keys("BTab")
    term.wait_for("· mode build")
    term.type("build it")
    term.wait_for("built")
    assert "write_file" in [t["name"] for t in term.requests()[1]["tools"]]


def test_esc_esc_edits_the_previous_prompt_and_ctrl_r_searches(start) -> None:  # type: ignore[no-untyped-def]
    term = start(script=[{"text": "one"}, {"text": "two"}, {"text": "three"}])
    term.type("a unique-zebra request")
    term.wait_for("one")
    term.wait_idle()
    term.type("something else")
    term.wait_for("two")
    term.wait_idle()
    term.keys("Escape", "Escape")
    term.wait_for("❯ something else")
    term.keys("C-u")
    term.keys("C-r")
    term.type("zebra", enter=False)
    term.wait_for("a unique-zebra request")
    term.keys("Enter")  # accept the search result into the line
    term.wait_for("❯ a unique-zebra request")
    term.keys("Enter")
    term.wait_for("three")
    assert [t for r, t in message_texts(term.requests()[-1]) if r == "user"][
        -1
    ] == "a unique-zebra request"
