"""Real public Claude Code plugins (commit-commands, feature-dev,
explanatory-output-style, hookify: tests/claude_plugins/SOURCES.md) from a marketplace
laid out in a local git repository: added as a directory and through a ``file://``
URL, installed, and used through the real ``ketch`` command — a command and an agent in
a scripted turn, hooks at their events, an MCP server that starts only once shown and
pinned, a changed hook script held back until trusted again — then uninstalled, with
nothing left behind."""

from __future__ import annotations

import json
from pathlib import Path

from ketch.testing import call, text
from tests.agents.conftest import first_prompt, tool_names
from tests.claude_plugins.conftest import MARKET, PluginCli, needs_git, notices, request_text

pytestmark = needs_git


def test_add_from_the_directory_and_from_the_git_repository(cli: PluginCli) -> None:
    added = cli.ok("plugin", "marketplace", "add", str(cli.market))
    assert f"added marketplace {MARKET}" in added.stdout
    for name in ("commit-commands", "feature-dev", "explanatory-output-style", "hookify"):
        assert f"{name}@{MARKET}" in added.stdout
    listed = json.loads(cli.ok("plugin", "marketplace", "list", "--json").stdout)
    assert listed[0]["source"] == "directory" and listed[0]["location"] == str(cli.market)
    # The same catalog from its git repository: another source under the same name is refused...
    url = cli.market.as_uri()
    again = cli("plugin", "marketplace", "add", url)
    assert again.returncode == 1 and "already added" in again.stderr
    # ...so remove it and add it through file://: a clone in the data dir, no .git kept.
    cli.ok("plugin", "marketplace", "remove", MARKET)
    cloned = cli.ok("plugin", "marketplace", "add", url)
    assert f"added marketplace {MARKET} from {url}" in cloned.stdout
    record = json.loads(cli.ok("plugin", "marketplace", "list", "--json").stdout)[0]
    assert record["source"] == "git" and len(record["commit"]) == 40
    clone = Path(record["installLocation"])
    assert (clone / ".claude-plugin" / "marketplace.json").is_file()
    assert not (clone / ".git").exists()
    installed = cli.ok("plugin", "install", f"feature-dev@{MARKET}", "--yes")
    assert record["commit"][:12] in installed.stdout  # the version: the marketplace's commit
    assert "feature-dev:code-explorer" in installed.stdout
    available = json.loads(cli.ok("plugin", "list", "--available", "--json").stdout)
    assert {row["id"]: row["installed"] for row in available} == {
        f"{name}@{MARKET}": name == "feature-dev"
        for name in (
            "commit-commands",
            "explanatory-output-style",
            "feature-dev",
            "hookify",
            "ketch-test-mcp",
        )
    }


def test_a_command_and_an_agent_in_a_scripted_turn_and_a_hook_at_its_event(
    cli: PluginCli,
) -> None:
    cli.add_and_install("feature-dev", "explanatory-output-style")
    script = [
        call(
            "agent",
            {
                "description": "explore",
                "prompt": "AGENT-TASK: find where flags are parsed",
                "agent": "feature-dev:code-explorer",
            },
        ),
        text("Flags are parsed in cli.py"),
        text("Plan: add --flag in cli.py"),
    ]
    result = cli.turn("/feature-dev:feature-dev add a --flag option", script)
    assert result.returncode == 0, result.stderr[-2000:]
    parent, child = result.requests[0], result.requests[1]
    # The command's prompt (the plugin's Markdown, $ARGUMENTS filled in) reached the model.
    assert "# Feature Development" in first_prompt(parent)
    assert "Initial request: add a --flag option" in request_text(parent)
    # The SessionStart hook of explanatory-output-style ran its bundled script.
    assert "explanatory' output style mode" in request_text(parent)
    # The subagent ran with the plugin agent's instructions and its tools only.
    assert first_prompt(child).startswith("AGENT-TASK")
    assert "You are an expert code analyst" in request_text(child)
    assert tool_names(child) <= {
        "read_file",
        "list_dir",
        "glob",
        "grep",
        "shell_job",
        "web_fetch",
        "web_search",
        "todo",
    }
    assert "write_file" not in tool_names(child) and "shell" not in tool_names(child)
    finished = [e for e in result.of_type("subagent") if e.get("status") == "finished"]
    assert finished and finished[0]["name"] == "feature-dev:code-explorer"
    assert "Plan: add --flag in cli.py" in result.stdout


def test_a_commands_bang_lines_run_as_pinned(cli: PluginCli) -> None:
    cli.add_and_install("commit-commands")
    from tests.claude_plugins.conftest import git

    git(cli.workspace, "init", "-q", "-b", "trunk")
    result = cli.turn("/commit-commands:commit", [text("nothing to commit")])
    assert result.returncode == 0, result.stderr[-2000:]
    prompt = first_prompt(result.requests[0])
    assert "Current branch: trunk" in prompt  # !`git branch --show-current` ran
    assert "was not run" not in prompt


def test_hookify_blocks_a_dangerous_rm_before_it_runs(cli: PluginCli) -> None:
    """hookify's own PreToolUse hook (Python importing its sibling modules) reads the
    project's rule and blocks the call: the file survives."""
    cli.add_and_install("hookify")
    rules = cli.workspace / ".claude"
    rules.mkdir()
    example = cli.market / "plugins" / "hookify" / "examples" / "dangerous-rm.local.md"
    (rules / "hookify.dangerous-rm.local.md").write_text(example.read_text())
    victim = cli.workspace / "keep"
    victim.mkdir()
    (victim / "file.txt").write_text("precious")
    script = [call("shell", {"command": "rm -rf keep"}), text("stopped")]
    result = cli.turn("clean up", script, "--profile", "full-access")
    assert (victim / "file.txt").read_text() == "precious"
    blocked = result.of_type("tool_result")[0]
    assert blocked["outcome"] == "blocked" and "hooks/pretooluse.py" in blocked["output"]
    assert "Dangerous rm command detected" in "\n".join(notices(result))  # its systemMessage


def test_a_changed_hook_script_does_not_run_until_trusted_again(cli: PluginCli) -> None:
    cli.add_and_install("explanatory-output-style")
    installed = cli.installed("explanatory-output-style") / "explanatory-output-style"
    script = installed / "hooks-handlers" / "session-start.sh"
    canary = cli.tmp / "changed-hook-ran"
    script.write_text(f"#!/usr/bin/env bash\necho ran > {canary}\n")
    result = cli.turn("hi", [text("hello")])
    assert result.returncode == 0
    assert not canary.exists()
    assert "explanatory' output style mode" not in request_text(result.requests[0])
    said = "\n".join(notices(result))
    assert (
        "changed since you trusted it" in said
        and "ketch plugin trust explanatory-output-style@" in said
    )
    # `ketch plugin trust` shows it as changed; without --yes and no terminal it pins nothing.
    shown = cli("plugin", "trust", "explanatory-output-style")
    assert (
        shown.returncode == 1
        and "changed" in shown.stdout
        and f"echo ran > {canary}" not in shown.stderr
    )
    cli.turn("hi", [text("hello")])
    assert not canary.exists()
    cli.ok("plugin", "trust", "explanatory-output-style", "--yes")
    cli.turn("hi", [text("hello")])
    assert canary.read_text().strip() == "ran"


def test_an_mcp_server_starts_only_once_shown_and_pinned(cli: PluginCli) -> None:
    cli.ok("plugin", "marketplace", "add", str(cli.market))
    # Not at a terminal and no --yes: the server's command line is shown, nothing installed.
    shown = cli("plugin", "install", f"ketch-test-mcp@{MARKET}")
    assert shown.returncode == 1 and "nothing installed" in shown.stderr
    assert "MCP server plugin_ketch-test-mcp_calc" in shown.stdout
    assert "${CLAUDE_PLUGIN_ROOT}/server.py --marker ${KETCH_TEST_MARKER}" in shown.stdout
    assert not cli.installed("ketch-test-mcp").exists()
    result = cli.turn("add", [text("ok")])
    assert not cli.marker.exists()
    cli.ok("plugin", "install", f"ketch-test-mcp@{MARKET}", "--yes")
    script = [call("mcp__plugin_ketch-test-mcp_calc__add", {"a": 2, "b": 40}), text("done")]
    result = cli.turn("add", script, "--profile", "full-access")
    assert cli.marker.exists()
    assert "mcp__plugin_ketch-test-mcp_calc__add" in tool_names(result.requests[0])
    assert "42" in request_text(result.requests[1])
    # Its server changed after install: not started, not offered, said.
    cli.marker.unlink()
    server = cli.installed("ketch-test-mcp") / "ketch-test-mcp" / "server.py"
    server.write_text(server.read_text() + "\n# changed\n")
    result = cli.turn("add", [text("ok")])
    assert not cli.marker.exists()
    assert "mcp__plugin_ketch-test-mcp_calc__add" not in tool_names(result.requests[0])
    assert "not started" in "\n".join(notices(result))


def test_uninstall_leaves_nothing_behind(cli: PluginCli) -> None:
    cli.add_and_install("hookify", "ketch-test-mcp")
    cli.turn(
        "add",
        [call("mcp__plugin_ketch-test-mcp_calc__add", {"a": 1, "b": 1}), text("2")],
        "--profile",
        "full-access",
    )
    cli.ok("plugin", "enable", "ketch-test-mcp", "--scope", "project")
    config = cli.workspace / ".ketch" / "config.toml"
    trust_file = cli.config_dir / "trust.json"
    mcp_pins = Path(cli.env["KETCH_STATE_DIR"]) / "mcp-pins.json"
    assert "ketch-test-mcp@" in config.read_text()
    assert "ketch-test-mcp" in mcp_pins.read_text()
    pinned_here = json.loads(trust_file.read_text())["workspaces"]
    assert any(pinned_here.values())
    for plugin in ("hookify", "ketch-test-mcp"):
        cli.ok("plugin", "uninstall", plugin)
        assert not cli.installed(plugin).exists()
    assert sorted(p.name for p in (cli.data / "plugins").iterdir()) == []
    assert "claude_plugins" not in config.read_text()
    assert "ketch-test-mcp" not in mcp_pins.read_text()
    workspaces = json.loads(trust_file.read_text())["workspaces"]
    assert all(not entry.get("pins") for entry in workspaces.values())
    assert "no Claude Code plugin installed" in cli.ok("plugin", "list").stderr
    # ...and nothing of them runs or is offered any more.
    result = cli.turn("hi", [text("ok")])
    assert not any("hookify" in t or "plugin_" in t for t in tool_names(result.requests[0]))
