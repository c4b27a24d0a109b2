"""An installed plugin's namespaced command in the interactive shell (a real terminal):
listed by /help with where it comes from, and run when typed."""

from __future__ import annotations

import pytest

from tests.claude_plugins.conftest import PluginCli, needs_git
from tests.interactive.interactive_kit import Terminal, message_texts, needs_tmux, no_traceback

pytestmark = [needs_git, needs_tmux, pytest.mark.slow]

KEPT = ("HOME", "XDG_DATA_HOME", "KETCH_CONFIG_DIR", "KETCH_STATE_DIR", "KETCH_PASSPHRASE")


def test_a_plugin_command_in_the_shell(cli: PluginCli) -> None:
    cli.add_and_install("commit-commands")
    root = cli.tmp / "term"
    root.mkdir()
    term = Terminal(
        root,
        script=[{"text": "committed"}],
        plugins=None,
        env={key: cli.env[key] for key in KEPT},
        workspace=cli.workspace,
    )
    try:
        term.ready()
        term.type("/help")
        screen = term.wait_for("Ctrl-D quits", count=2)
        assert "/commit-commands:commit" in screen and "plugin commit-commands@" in screen
        term.wait_idle()
        term.type("/commit-commands:commit")
        term.wait_for("committed")
        said = [t for r, t in message_texts(term.requests()[0]) if r == "user"][-1]
        assert "Based on the above changes, create a single git commit" in said
        no_traceback(term.screen())
    finally:
        term.close()
