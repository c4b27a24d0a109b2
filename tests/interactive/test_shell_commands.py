"""In a real terminal: Markdown commands from .ketch/commands and .claude/commands become
slash commands (listed in /help and completion with their source), send their expanded
prompt, and allowed-tools narrows the tools of that turn; a typed skill sends its body."""

from __future__ import annotations

from pathlib import Path

import pytest
from interactive_kit import message_texts, needs_tmux, no_traceback

pytestmark = [needs_tmux, pytest.mark.slow]


TERMINAL_DEFAULTS = {
    "plugins": "interactive,fs,search,policy,commands,skills",
    "isolated_home": True,
}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_review_command_sends_the_expanded_prompt_with_narrowed_tools(
    start, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    write(
        ws / ".ketch/commands/review.md",
        '---\ndescription: Review code for bugs\nargument-hint: "[path]"\nallowed-tools: Read, Grep\n---\nReview the code in $ARGUMENTS and list the bugs.\n',
    )
    write(ws / ".claude/commands/explain.md", "Explain $ARGUMENTS to a newcomer.\n")
    term = start(script=[{"text": "reviewed"}, {"text": "explained"}])
    term.type("/help")
    screen = term.wait_for("Ctrl-D quits", count=2)
    assert (
        "/review" in screen
        and "Review code for bugs" in screen
        and "project .ketch/commands: review.md" in screen
    )
    assert "/explain" in screen and "project .claude/commands: explain.md" in screen
    term.wait_idle()
    term.type("/rev", enter=False)
    term.wait_for("[path] Review code for bugs")  # the completion menu shows the hint and source
    term.keys("C-u")
    term.type("/review src/")
    term.wait_for("reviewed")
    first = term.requests()[0]
    assert [t for r, t in message_texts(first) if r == "user"][
        -1
    ] == "Review the code in src/ and list the bugs."
    assert sorted(tool["name"] for tool in first["tools"]) == ["grep", "read_file"]
    term.wait_idle()
    term.type("/explain the loop")
    term.wait_for("explained")
    second = term.requests()[1]
    assert [t for r, t in message_texts(second) if r == "user"][
        -1
    ] == "Explain the loop to a newcomer."
    assert "write_file" in [
        tool["name"] for tool in second["tools"]
    ]  # no allowed-tools: not narrowed
    no_traceback(term.screen())


def test_typed_skill_sends_its_body_and_only_its_description_is_listed(
    start, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    write(
        ws / ".claude/skills/changelog/SKILL.md",
        "---\nname: changelog\ndescription: Write changelog entries\n---\nCHANGELOG-BODY: one line per change, newest first.\n",
    )
    term = start(script=[{"text": "plain answer"}, {"text": "wrote it"}])
    term.type("hello")
    term.wait_for("plain answer")
    first = term.requests()[0]
    assert (
        "changelog: Write changelog entries" in first["system"]
        and "CHANGELOG-BODY" not in first["system"]
    )
    term.wait_idle()
    term.type("/changelog for 1.2")
    term.wait_for("wrote it")
    sent = [t for r, t in message_texts(term.requests()[1]) if r == "user"][-1]
    assert "CHANGELOG-BODY" in sent and "for 1.2" in sent
