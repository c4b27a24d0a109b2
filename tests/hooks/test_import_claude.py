"""``ketch import claude``: a project's and a user's Claude Code settings (permissions,
hooks, defaultMode, additionalDirectories, env) and ``.mcp.json``, shown first and written
only when the person confirms; what cannot be brought over is said, never dropped. The
imported rules then act, judged by effect."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from ketch.testing import call, text
from tests.agents.conftest import Cli

RUN = ("--provider", "scripted", "--output-format", "stream-json")

PROJECT_SETTINGS = {
    "permissions": {
        "allow": ["Bash(npm run test:*)", "WebSearch", "Read(./docs/**)"],
        "ask": ["Bash(git push:*)"],
        "deny": ["Read(./secrets/**)", "Bash(curl:*)", "Agent(Explore)"],
        "defaultMode": "acceptEdits",
        "additionalDirectories": ["../shared-lib"],
    },
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash|WebSearch",
                "hooks": [{"type": "command", "command": "./.claude/hooks/check.sh"}],
            },
            {
                "matcher": "Write",
                "hooks": [{"type": "http", "url": "https://example.invalid/hook"}],
            },
        ]
    },
    "env": {"ANTHROPIC_API_KEY": "sk-ant-SECRET-VALUE-123", "NODE_ENV": "test"},
}
MCP = {
    "mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time"]},
        "github": {
            "type": "http",
            "url": "https://api.example.invalid/mcp",
            "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"},
        },
    }
}


def project(cli: Cli) -> None:
    claude = cli.workspace / ".claude"
    claude.mkdir(parents=True, exist_ok=True)
    (claude / "settings.json").write_text(json.dumps(PROJECT_SETTINGS), encoding="utf-8")
    (cli.workspace / ".mcp.json").write_text(json.dumps(MCP), encoding="utf-8")


def workspace_config(cli: Cli) -> Path:
    return cli.workspace / ".ketch" / "config.toml"


def test_dry_run_shows_everything_and_writes_nothing(cli: Cli) -> None:
    project(cli)
    result = cli("import", "claude", "--project", "--dry-run")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "permissions.allow += 'shell(npm run test:*)'" in out
    assert "permissions.allow += 'web_search'" in out  # WebSearch maps now
    assert "permissions.deny += 'read(secrets/**)'" in out
    assert "profile = 'assisted'" in out
    assert "[[hooks.PreToolUse]] matcher = 'shell|web_search'" in out
    assert "[mcp_servers.time] 'uvx mcp-server-time'" in out
    # Said, not dropped: the unmappable deny rule (loudly), the http hook, the ${VAR} server, env
    assert "Agent(Explore)" in out and "ketch does not deny it" in out
    assert (
        "http handler" in out and "github" in out and "GITHUB_TOKEN" not in out.split("github")[0]
    )
    assert "env (ANTHROPIC_API_KEY, NODE_ENV)" in out
    assert "sk-ant-SECRET-VALUE-123" not in out  # a value is never shown
    assert "dry run: nothing was written" in out
    assert not workspace_config(cli).exists()


def test_without_confirmation_nothing_is_written(cli: Cli) -> None:
    project(cli)
    result = cli("import", "claude", "--project")  # no terminal to say yes
    assert result.returncode == 1 and "nothing was written" in result.stderr
    assert not workspace_config(cli).exists()


def test_yes_writes_the_workspace_config_keeping_what_was_there(cli: Cli) -> None:
    project(cli)
    config = workspace_config(cli)
    config.parent.mkdir()
    config.write_text(
        '# my notes about this project\n[permissions]\ndeny = ["shell(rm:*)"]\n', encoding="utf-8"
    )
    result = cli("import", "claude", "--project", "--yes")
    assert result.returncode == 0, result.stderr
    written = config.read_text(encoding="utf-8")
    assert written.startswith("# my notes about this project")
    data = tomllib.loads(written)
    assert data["permissions"]["deny"] == ["shell(rm:*)", "read(secrets/**)", "shell(curl:*)"]
    assert "shell(npm run test:*)" in data["permissions"]["allow"]
    assert data["permissions"]["ask"] == ["shell(git push:*)"]
    shared = (cli.workspace / ".." / "shared-lib").resolve()
    assert f"read({shared})" in data["permissions"]["allow"]
    assert data["profile"] == "assisted" and data["mode"] == "build"
    (hook,) = data["hooks"]["PreToolUse"]
    assert hook == {
        "matcher": "shell|web_search",
        "command": "./.claude/hooks/check.sh",
        "claude_names": True,
    }
    assert data["mcp_servers"] == {"time": {"command": "uvx", "args": ["mcp-server-time"]}}
    assert "SECRET" not in written and "NODE_ENV" not in written
    again = cli("import", "claude", "--project", "--yes")
    assert "nothing new to add" in again.stdout and config.read_text(encoding="utf-8") == written


def test_an_imported_deny_rule_acts_even_before_the_workspace_is_trusted(cli: Cli) -> None:
    project(cli)
    secrets = cli.workspace / "secrets"
    secrets.mkdir()
    (secrets / "prod.txt").write_text("CANARY-PROD-PASSWORD\n", encoding="utf-8")
    script = [call("read_file", {"path": "secrets/prod.txt"}), text("done")]
    before = cli("-p", "read it", *RUN, "--profile", "full-access", script=script)
    assert "CANARY-PROD-PASSWORD" in json.dumps(before.of_type("tool_result"))  # as a control
    assert cli("import", "claude", "--project", "--yes").returncode == 0
    after = cli("-p", "read it", *RUN, "--profile", "full-access", script=script)
    results = after.of_type("tool_result")
    assert "CANARY-PROD-PASSWORD" not in json.dumps(results)
    assert "CANARY-PROD-PASSWORD" not in json.dumps(after.requests)
    assert results and results[0]["ok"] is False


def test_user_settings_go_to_the_user_config(cli: Cli) -> None:
    home = cli.home / ".claude"
    home.mkdir(parents=True)
    (home / "settings.json").write_text(
        json.dumps(
            {"permissions": {"deny": ["Read(/secrets/**)"], "defaultMode": "bypassPermissions"}}
        ),
        encoding="utf-8",
    )
    result = cli("import", "claude", "--user", "--yes")
    assert result.returncode == 0, result.stderr
    user_config = Path(cli.env["KETCH_CONFIG_DIR"]) / "config.toml"
    data = tomllib.loads(user_config.read_text(encoding="utf-8"))
    assert data["permissions"]["deny"] == [f"read({home}/secrets/**)"]  # /path: the settings' root
    assert data["profile"] == "full-access"
    assert "hard guards" in result.stdout  # what bypassPermissions means here is said


def test_broken_settings_import_nothing(cli: Cli) -> None:
    claude = cli.workspace / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text('{"permissions": {"allow": [}', encoding="utf-8")
    result = cli("import", "claude", "--project", "--yes")
    assert result.returncode == 1
    assert (
        "settings.json:1: not valid JSON" in result.stderr
        and "nothing was imported" in result.stderr
    )
    assert not workspace_config(cli).exists()
