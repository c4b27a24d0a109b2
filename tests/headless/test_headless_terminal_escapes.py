"""Escape sequences from the model never reach the person's terminal: in headless text
mode under a tty, the answer, an unknown tool's name, notices and errors are shown with
their control characters escaped (``\\x1b]0;...``), never obeyed."""

from __future__ import annotations

import os
import pty
import select
import subprocess

import pytest

from tests.headless.headless_kit import Headless

pytestmark = pytest.mark.timeout(120)

HOSTILE = {
    "title": "\x1b]0;pwned-title\x07",
    "clipboard": "\x1b]52;c;ZXZpbA==\x07",
    "clear": "\x1b[2J",
    "c1": "\x9b2J",
    "bidi": "\u202e",
    "cr": "overwritten\rSAFE",
}


def _run_on_a_tty(headless: Headless, *args: str, argv: list[str] | None = None) -> bytes:
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        argv or headless.argv(*args),
        cwd=headless.workspace,
        env=headless.env(),
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    seen = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError("no output for 60 s")
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        seen += chunk
    proc.wait(30)
    os.close(leader)
    return seen


def test_escapes_in_the_answer_and_a_tool_name_are_shown_not_obeyed(headless: Headless) -> None:
    payload = "".join(HOSTILE.values())
    headless.script(
        [
            {"tool_calls": [{"name": f"evil{HOSTILE['title']}{HOSTILE['clear']}", "input": {}}]},
            {"text": f"answer {payload} end"},
        ]
    )
    seen = _run_on_a_tty(headless, "-p", "hi")
    for name, raw in HOSTILE.items():
        if name == "cr":
            continue
        assert raw.encode() not in seen, (name, seen)
    assert b"\x1b]" not in seen and b"\x1b[2J" not in seen and b"\xc2\x9b" not in seen
    assert b"\\x1b]0;pwned-title\\x07" in seen  # visible, so the person sees what was tried
    assert b"overwritten\\rSAFE" in seen
    assert b"evil\\x1b]0;pwned-title" in seen  # the unknown tool's name, escaped too
    # The saved transcript, shown on a terminal, is just as harmless.
    import json
    import sys

    listed = subprocess.run(
        [sys.executable, "-m", "ketch", "sessions", "list", "--json"],
        cwd=headless.workspace,
        env=headless.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    (session,) = json.loads(listed.stdout)
    show = [sys.executable, "-m", "ketch", "sessions", "show", session["id"]]
    shown = _run_on_a_tty(headless, argv=show)
    assert b"answer \\x1b]0;pwned-title" in shown, shown[-2000:]
    assert b"\x1b]" not in shown and b"\x1b[2J" not in shown


def test_piped_output_keeps_the_answer_as_the_model_wrote_it(headless: Headless) -> None:
    headless.script([{"text": "tab\there and an esc \x1b[1m"}])
    proc = headless.run("-p", "hi")
    assert proc.stdout == "tab\there and an esc \x1b[1m\n"  # not a terminal: the bytes as sent
