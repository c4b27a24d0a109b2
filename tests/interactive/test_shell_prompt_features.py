"""In a real terminal: ``@path`` attaches a file (and completes as you type), a secret
asks first; ``!command`` runs the person's own command with no model request, and the
next request carries it."""

from __future__ import annotations

from pathlib import Path

import pytest
from interactive_kit import message_texts, needs_tmux, no_traceback

pytestmark = [needs_tmux, pytest.mark.slow]


TERMINAL_DEFAULTS = {"plugins": "interactive,fs,policy,attach"}


def test_at_file_is_attached_and_completes_as_typed(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("shell-attach-canary the plan is ready\n")
    term = start(script=[{"text": "got the notes"}])
    term.type("summarize @no", enter=False)
    term.wait_for("notes.txt")  # the completion menu, as typed
    term.keys("Tab")
    term.wait_for("❯ summarize @notes.txt")
    term.keys("Escape")  # close the menu (Esc alone does not edit the line)
    term.type(" please")
    term.wait_for("got the notes")
    sent = message_texts(term.requests()[0])
    assert sent[-2] == ("user", "summarize @notes.txt please")
    assert "shell-attach-canary the plan is ready" in sent[-1][1]
    no_traceback(term.screen())


def test_at_secret_asks_first(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".env").write_text("TOKEN=shell-secret-canary\n")
    term = start(script=[{"text": "fine, without it"}])
    term.type("check @.env ")
    screen = term.wait_for("Allow read_file?")
    assert ".env" in screen.split("Allow read_file?")[-1]
    assert term.requests() == []  # nothing sent while it asks
    term.keys("n")
    term.wait_for("fine, without it")
    sent = "\n".join(t for _, t in message_texts(term.requests()[0]))
    assert "shell-secret-canary" not in sent and "was not attached" in sent


def test_bang_command_runs_without_the_model_and_reaches_the_next_request(start) -> None:  # type: ignore[no-untyped-def]
    term = start(script=[{"text": "I see you ran echo"}])
    term.type("!echo hi && echo bang-canary-5")
    screen = term.wait_for("the model sees this with your next message")
    assert "$ echo hi && echo bang-canary-5" in screen
    assert "\nhi\n" in screen and "bang-canary-5" in screen
    assert term.requests() == []  # no model request for it
    term.wait_idle()
    term.type("what did it print?")
    term.wait_for("I see you ran echo")
    texts = [t for r, t in message_texts(term.requests()[0]) if r == "user"]
    assert any(
        "$ echo hi && echo bang-canary-5" in t
        and "bang-canary-5" in t.split("\n", 2)[-1]
        and "[exit code 0]" in t
        for t in texts
    )
    assert texts[-1] == "what did it print?"
