"""Where a plugin is on: user scope (everywhere), a workspace's ``[claude_plugins]``
(project scope: a trust item for whoever clones it; ``disabled`` applies at once), and
``update`` showing what changed before anything is replaced. Broken state is one line."""

from __future__ import annotations

import json

from ketch.testing import text
from tests.agents.conftest import first_prompt
from tests.claude_plugins.conftest import MARKET, PluginCli, needs_git, notices

pytestmark = needs_git
COMMIT = f"commit-commands@{MARKET}"


def runs_command(cli: PluginCli) -> bool:
    """Whether /commit-commands:commit is a command here (its prompt reaches the model)."""
    result = cli.turn("/commit-commands:commit", [text("ok")])
    return "Based on the above changes, create a single git commit" in first_prompt(
        result.requests[0]
    )


def states(cli: PluginCli) -> dict[str, dict]:
    return {row["id"]: row for row in json.loads(cli.ok("plugin", "list", "--json").stdout)}


def test_project_scope_is_a_workspace_item_for_whoever_clones_it(cli: PluginCli) -> None:
    cli.ok("plugin", "marketplace", "add", str(cli.market))
    cli.ok("plugin", "install", COMMIT, "--scope", "project", "--yes")
    config = cli.workspace / ".ketch" / "config.toml"
    assert f'"{COMMIT}"' in config.read_text()
    row = states(cli)[COMMIT]
    assert row["enabled"] is False and row["active_here"] is True
    assert runs_command(cli)  # the installer typed it: its entry is trusted here
    # A teammate's clone: the same config, not trusted by them.
    clone = cli.tmp / "clone"
    (clone / ".ketch").mkdir(parents=True)
    (clone / ".ketch" / "config.toml").write_text(config.read_text())
    other = PluginCli.__new__(PluginCli)
    other.__dict__.update(cli.__dict__)
    other.workspace = clone
    assert not runs_command(other)
    listed = other("trust")
    assert f"Claude Code plugin {COMMIT}" in listed.stdout and listed.returncode == 1
    other.ok("trust", "--yes")
    assert runs_command(other)


def test_user_scope_and_a_workspace_that_turns_a_plugin_off(cli: PluginCli) -> None:
    cli.add_and_install("commit-commands")
    assert runs_command(cli)
    cli.ok("plugin", "disable", "commit-commands")
    assert states(cli)[COMMIT]["enabled"] is False and not runs_command(cli)
    cli.ok("plugin", "enable", "commit-commands")
    assert runs_command(cli)
    # A repository may turn it off for itself without being trusted: it only takes away.
    (cli.workspace / ".ketch").mkdir()
    (cli.workspace / ".ketch" / "config.toml").write_text(
        f'[claude_plugins]\ndisabled = ["{COMMIT}"]\n'
    )
    assert not runs_command(cli)


def test_update_shows_what_changed_before_replacing_anything(cli: PluginCli) -> None:
    cli.add_and_install("explanatory-output-style")
    assert "up to date" in cli.ok("plugin", "update", "explanatory-output-style").stdout
    script = (
        cli.market / "plugins" / "explanatory-output-style" / "hooks-handlers" / "session-start.sh"
    )
    canary = cli.tmp / "new-version-ran"
    script.write_text(f"#!/usr/bin/env bash\necho new > {canary}\n")
    shown = cli("plugin", "update", "explanatory-output-style")
    assert shown.returncode == 1 and "nothing updated" in shown.stderr
    assert "changed  hook SessionStart #1.1" in shown.stdout
    installed = cli.installed("explanatory-output-style") / "explanatory-output-style"
    assert "explanatory" in (installed / "hooks-handlers" / "session-start.sh").read_text()
    cli.turn("hi", [text("ok")])
    assert not canary.exists()
    cli.ok("plugin", "update", "explanatory-output-style", "--yes")
    assert f"echo new > {canary}" in (installed / "hooks-handlers" / "session-start.sh").read_text()
    cli.turn("hi", [text("ok")])
    assert canary.read_text().strip() == "new"


def test_a_broken_pin_file_trusts_nothing_and_says_so(cli: PluginCli) -> None:
    cli.add_and_install("explanatory-output-style")
    pins = cli.installed("explanatory-output-style") / "pins.json"
    pins.write_text("{not json")
    shown = cli("plugin", "trust", "explanatory-output-style", "--yes")
    assert shown.returncode == 1 and "Traceback" not in shown.stderr
    assert f"{pins}: not valid JSON" in shown.stderr
    result = cli.turn("hi", [text("ok")])
    assert result.returncode == 0
    assert "explanatory' output style mode" not in json.dumps(result.requests[0])  # held back
    pins.unlink()
    cli.ok("plugin", "trust", "explanatory-output-style", "--yes")
    result = cli.turn("hi", [text("ok")])
    assert "explanatory' output style mode" in json.dumps(result.requests[0])


def test_broken_state_is_one_clear_line(cli: PluginCli) -> None:
    cli.add_and_install("commit-commands")
    record = cli.installed("commit-commands") / "install.json"
    record.write_text("{broken")
    listed = cli("plugin", "list")
    assert "Traceback" not in listed.stderr
    assert f"{record}: not valid JSON" in listed.stderr
    result = cli.turn("hi", [text("ok")])
    assert result.returncode == 0 and f"{record}: not valid JSON" in "\n".join(notices(result))
    registry = cli.data / "marketplaces.json"
    registry.write_text("[]")
    broken = cli("plugin", "marketplace", "list")
    assert broken.returncode == 1 and "not a marketplace list" in broken.stderr
    assert "Traceback" not in broken.stderr
    registry.unlink()
    missing = cli("plugin", "install", "nothing@nowhere")
    assert missing.returncode == 1 and "no marketplace named nowhere" in missing.stderr
    bad = cli("plugin", "marketplace", "add", str(cli.tmp / "absent"))
    assert bad.returncode == 1 and "no such directory" in bad.stderr
    empty = cli.tmp / "empty"
    empty.mkdir()
    not_one = cli("plugin", "marketplace", "add", str(empty))
    assert not_one.returncode == 1 and "not a Claude Code marketplace" in not_one.stderr
    assert not (cli.data / "marketplaces.json").exists()


def test_the_two_commands_are_told_apart(cli: PluginCli) -> None:
    """`ketch plugin` (Claude Code bundles) and `ketch plugins` (ketch's own Python
    plugins) say which is which."""
    helped = cli("--help")
    assert "Claude Code plugins" in helped.stdout
    assert "ketch plugins" in cli("plugin", "--help").stdout
    cli.add_and_install("commit-commands")
    rows = [line.split()[0] for line in cli.ok("plugins").stdout.splitlines() if line[:1].isalnum()]
    assert "claude_plugins" in rows and not any(r.startswith("commit-commands") for r in rows)
    assert f"{COMMIT}" in cli.ok("plugin", "list").stdout
