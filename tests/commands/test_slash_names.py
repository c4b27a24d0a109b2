"""``/git:commit`` names the command of ``git/commit.md`` in every frontend: one parser
(``ketch_prompt_kit.slash``) read by the shell, ACP and headless runs."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from ketch.testing import Harness, text
from ketch_acp.live import LiveSession
from ketch_interactive.slash import parse as shell_parse
from ketch_prompt_kit.slash import find, parse


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KETCH_CONFIG_DIR", str(tmp_path / "config"))


@pytest.mark.parametrize(
    ("line", "parsed"),
    [
        ("/git:commit fix the typo", ("git:commit", "fix the typo")),
        ("/frontend:component Button", ("frontend:component", "Button")),
        ("/Review", ("review", "")),
        ("/pr-review-toolkit:review-pr 12 tests", ("pr-review-toolkit:review-pr", "12 tests")),
        ("/usr/bin/env python", None),
        ("/git: message", None),
        ("not a command", None),
    ],
)
def test_the_one_parser(line: str, parsed: tuple[str, str] | None) -> None:
    assert parse(line) == parsed
    assert shell_parse(line) == parsed


def test_the_shell_acp_and_headless_find_a_namespaced_command(tmp_path: Path) -> None:
    folder = tmp_path / "ws" / ".claude" / "commands" / "git"
    folder.mkdir(parents=True)
    (folder / "commit.md").write_text("Commit: $ARGUMENTS\n", encoding="utf-8")
    h = Harness.create(tmp_path, script=[text("ok")], bundled=["commands"])
    command, argument = find(h.kernel.commands.values(), "/git:commit fix it")  # type: ignore[misc]
    assert command.name == "git:commit" and argument == "fix it"
    assert find(h.kernel.commands.values(), "/commit now")[0] is command  # type: ignore[index]
    acp = SimpleNamespace(kernel=h.kernel)
    assert LiveSession._slash_command(acp, "/git:commit fix it") == (command, "fix it")  # type: ignore[arg-type]
