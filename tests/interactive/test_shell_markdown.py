"""Answers render as Markdown while they stream (rich): headings, bold, lists, tables and
fenced code show no raw markup; reasoning is dimmed and collapsed; NO_COLOR is respected."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from interactive_kit import Terminal, needs_tmux, no_traceback

pytestmark = [needs_tmux, pytest.mark.slow]

ANSWER = (
    "# Release notes\n\n"
    "This is **very important** and *subtle*.\n\n"
    "- first item\n- second item\n\n"
    "| name | value |\n|------|-------|\n| alpha | 1 |\n| beta | 2 |\n\n"
    "```python\ndef greet(name):\n    return f'hi {name}'\n```\n\n"
    "Done with `code` here."
)


def _chunks(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _colours(text: str) -> list[str]:
    """SGR colour codes set in ``text`` (39/49, tmux's resets to the default, are not colours)."""
    found = []
    for params in re.findall(r"\x1b\[([0-9;]*)m", text):
        for code in params.split(";"):
            if code.isdigit() and (
                30 <= int(code) <= 38 or 40 <= int(code) <= 48 or 90 <= int(code) <= 107
            ):
                found.append(code)
    return found


def _answer_area(screen: str) -> str:
    return re.split(r"\n(?:\x1b\[[0-9;]*m)*── [0-9.]+s", screen.split("show me", 1)[1])[0]


def test_streamed_markdown_shows_no_raw_markup(start) -> None:  # type: ignore[no-untyped-def]
    term = start(script=[{"text": ANSWER, "chunks": _chunks(ANSWER)}])
    term.type("show me")
    term.wait_for("── ")
    area = _answer_area(term.screen())
    for text in (
        "Release notes",
        "very important",
        "first item",
        "second item",
        "alpha",
        "beta",
        "def greet(name):",
        "Done with code here.",
    ):
        assert text in area, area
    assert "**" not in area and "```" not in area and "`" not in area
    assert not re.search(r"(?m)^\s*#", area), area  # no raw heading marker
    assert "|------|" not in area  # the table is drawn, not its source
    assert (
        area.count("Release notes") == 1
    )  # printed once: no block is re-rendered into the scrollback
    no_traceback(term.screen())


def test_code_is_highlighted_and_no_color_turns_colours_off(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    term = start(script=[{"text": ANSWER, "chunks": _chunks(ANSWER)}])
    term.type("show me")
    term.wait_for("── ")
    coloured = term.escapes()
    code_line = next(line for line in coloured.splitlines() if "greet" in line)
    assert re.search(r"\x1b\[[0-9;]*3[0-9;]*m", code_line), repr(
        code_line
    )  # a foreground colour in the code block
    term.close()
    plain = Terminal(
        tmp_path / "nc", script=[{"text": ANSWER, "chunks": _chunks(ANSWER)}], env={"NO_COLOR": "1"}
    )
    try:
        plain.ready()
        plain.type("show me")
        plain.wait_for("── ")
        area = _answer_area(plain.escapes())
        assert "very important" in area
        assert not _colours(area), repr(area)  # bold and italic stay; no colour at all
    finally:
        plain.close()


def test_reasoning_is_collapsed_and_reasoning_command_shows_it(start) -> None:  # type: ignore[no-untyped-def]
    term = start(
        script=[{"reasoning": "secret chain of thought about the problem", "text": "the answer"}]
    )
    term.type("think hard")
    screen = term.wait_for("the answer")
    assert "✻ thought for" in screen
    assert "secret chain of thought" not in screen
    term.wait_idle()
    term.type("/reasoning")
    term.wait_for("secret chain of thought about the problem")
