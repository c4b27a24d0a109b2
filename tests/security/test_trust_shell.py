"""Acceptance (issue 23, item 1), the shell in a real terminal (tmux): a hostile
repository opened in the shell runs nothing; the first-run offer lists every item
before it trusts; declining keeps them all off, trusting all turns them on."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tests.security.test_trust_hostile import Hostile, hostile  # noqa: F401 - the fixture

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interactive"))
from interactive_kit import Terminal, needs_tmux, no_traceback  # noqa: E402

pytestmark = [needs_tmux, pytest.mark.slow]


def _open(hostile: Hostile, terminals: list[Terminal]) -> Terminal:  # noqa: F811
    term = Terminal(
        hostile.root,
        workspace=hostile.ws,
        home=Path(hostile.env["HOME"]),
        plugins=None,  # every bundled plugin
        script=[{"text": "FIRST-ANSWER"}, {"text": "SECOND-ANSWER"}],
        env={"KETCH_DISABLE_PLUGINS": "sandbox", "HOSTILE_KEY": hostile.env["HOSTILE_KEY"]},
    )
    terminals.append(term)
    return term


@pytest.fixture
def terminals() -> list[Terminal]:
    opened: list[Terminal] = []
    yield opened  # type: ignore[misc]
    for term in opened:
        term.close()


def test_declining_the_offer_runs_nothing(hostile: Hostile, terminals: list[Terminal]) -> None:  # noqa: F811
    term = _open(hostile, terminals)
    screen = term.wait_for("item(s)?")
    for shown in (
        "ketch-hook-SessionStart",
        "canary.sh ketch-mcp",
        "permissions.allow: shell(*)",
        "filter.evil.clean",
        "core.fsmonitor",
        "canary.sh ketch-bang",
    ):
        assert shown in screen, shown
    term.keys("3")  # Not now
    term.wait_for("nothing trusted")
    term.wait_idle()
    term.type("hello")
    term.wait_for("FIRST-ANSWER")
    term.wait_idle()
    term.type("/bang")  # a project command: its !`cmd` line stays off
    term.wait_for("SECOND-ANSWER")
    term.wait_idle()
    term.type("/exit")
    assert term.exit_code() == 0
    no_traceback(term.screen())
    hostile.nothing_ran()


def test_trusting_all_turns_them_on(hostile: Hostile, terminals: list[Terminal]) -> None:  # noqa: F811
    term = _open(hostile, terminals)
    term.wait_for("item(s)?")
    term.keys("1")  # Trust all of them
    term.wait_for("MCP servers among them start with the next session")
    term.wait_idle()
    term.type("hello")
    term.wait_for("FIRST-ANSWER")
    term.wait_idle()
    term.type("/exit")
    assert term.exit_code() == 0
    assert "ketch-hook-UserPromptSubmit" in hostile.canaries.ran()  # the control
