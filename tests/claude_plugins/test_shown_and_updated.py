"""Installing shows every ``!`cmd``` line of a plugin's commands before anything is
installed, and a command whose line changed after install does not run it until
trusted again; a git marketplace's new commit reaches an installed plugin only
through ``ketch plugin update``, which shows what changed first; removing the
marketplace leaves nothing of it behind."""

from __future__ import annotations

import json

from ketch.testing import text
from tests.agents.conftest import first_prompt
from tests.claude_plugins.conftest import MARKET, PluginCli, git, needs_git, notices

pytestmark = needs_git

BANG_LINES = ("git status", "git diff HEAD", "git branch --show-current", "git log --oneline -10")


def test_install_shows_every_bang_line_and_a_changed_one_waits(cli: PluginCli) -> None:
    cli.ok("plugin", "marketplace", "add", str(cli.market))
    shown = cli("plugin", "install", f"commit-commands@{MARKET}")
    assert shown.returncode == 1 and "nothing installed" in shown.stderr
    for line in BANG_LINES:
        assert line in shown.stdout, line
    assert "/commit-commands:commit" in shown.stdout
    assert not cli.installed("commit-commands").exists()
    # Not installed: the command is not one (its lines never ran).
    result = cli.turn("/commit-commands:commit", [text("ok")])
    assert "Current branch:" not in first_prompt(result.requests[0])
    cli.ok("plugin", "install", f"commit-commands@{MARKET}", "--yes")
    command = cli.installed("commit-commands") / "commit-commands" / "commands" / "commit.md"
    command.write_text(
        command.read_text().replace("!`git branch --show-current`", "!`echo BANG-RAN-$((6*7))`")
    )
    result = cli.turn("/commit-commands:commit", [text("ok")])
    prompt = first_prompt(result.requests[0])
    assert "BANG-RAN-42" not in prompt and "was not run: not trusted" in prompt
    assert "ketch plugin trust commit-commands@" in prompt + "\n".join(notices(result))
    listed = cli("plugin", "trust", "commit-commands")  # shown, nothing pinned without --yes
    assert listed.returncode == 1 and "echo BANG-RAN-$((6*7))" in listed.stdout
    cli.ok("plugin", "trust", "commit-commands", "--yes")
    result = cli.turn("/commit-commands:commit", [text("ok")])
    assert "Current branch: BANG-RAN-42" in first_prompt(result.requests[0])


def test_a_git_marketplaces_new_commit_is_shown_before_it_runs(cli: PluginCli) -> None:
    url = cli.market.as_uri()
    cli.ok("plugin", "marketplace", "add", url)
    first = json.loads(cli.ok("plugin", "marketplace", "list", "--json").stdout)[0]
    cli.ok("plugin", "install", f"explanatory-output-style@{MARKET}", "--yes")
    # The marketplace's author commits a new hook script.
    canary = cli.tmp / "new-commit-ran"
    script = cli.market / "plugins" / "explanatory-output-style" / "hooks-handlers"
    (script / "session-start.sh").write_text(f"#!/usr/bin/env bash\necho new > {canary}\n")
    git(cli.market, "commit", "-q", "-am", "a new hook")
    head = git(cli.market, "rev-parse", "HEAD").strip()
    assert head != first["commit"]
    cli.ok("plugin", "marketplace", "update", MARKET)
    record = json.loads(cli.ok("plugin", "marketplace", "list", "--json").stdout)[0]
    assert record["commit"] == head
    clone = cli.data / "marketplaces" / MARKET
    assert (
        f"echo new > {canary}"
        in (
            clone / "plugins" / "explanatory-output-style" / "hooks-handlers" / "session-start.sh"
        ).read_text()
    )
    cli.turn("hi", [text("ok")])
    assert not canary.exists()  # the installed copy is still the one pinned
    shown = cli("plugin", "update", "explanatory-output-style")
    assert shown.returncode == 1 and "nothing updated" in shown.stderr
    # Its version (plugin.json's) is the same; the commit it comes from is not.
    assert f"1.0.0 -> 1.0.0, commit {first['commit'][:12]} -> {head[:12]}" in shown.stdout
    assert "changed  hook SessionStart #1.1" in shown.stdout
    cli.turn("hi", [text("ok")])
    assert not canary.exists()
    cli.ok("plugin", "update", "explanatory-output-style", "--yes")
    [row] = json.loads(cli.ok("plugin", "list", "--json").stdout)
    assert row["commit"] == head and row["changed"] == row["new"] == 0
    cli.turn("hi", [text("ok")])
    assert canary.read_text().strip() == "new"
    # Removing the marketplace uninstalls what came from it and drops its clone.
    cli.ok("plugin", "marketplace", "remove", MARKET)
    assert not clone.exists()
    assert not cli.installed("explanatory-output-style").exists()
    assert json.loads((cli.data / "marketplaces.json").read_text()) == {}
    canary.unlink()
    cli.turn("hi", [text("ok")])
    assert not canary.exists()
