"""``${CLAUDE_PLUGIN_ROOT}`` and Claude Code's other variables: expanded where ketch
knows them, and never passed on unset (a path starting at ``/``): such a hook, or a
command's ``!`` line, does not run, and the person is told. Judged by effect."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ketch.testing import text
from tests.agents.conftest import Cli, clean

RUN = ("--provider", "scripted", "--output-format", "stream-json")


def marker_script(cli: Cli, name: str) -> Path:
    """A script that records it ran, and with which CLAUDE_PLUGIN_ROOT."""
    script = cli.tmp / "plugin" / "scripts" / f"{name}.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(
        "import os, sys\n"
        f"open({str(cli.tmp / (name + '.ran'))!r}, 'w').write(os.environ.get('CLAUDE_PLUGIN_ROOT', '-'))\n",
        encoding="utf-8",
    )
    return script


def test_a_hook_naming_the_plugin_root_without_one_does_not_run(cli: Cli) -> None:
    marker_script(cli, "check")
    command = f"{sys.executable} ${{CLAUDE_PLUGIN_ROOT}}/scripts/check.py"
    cli.config(f"[[hooks.UserPromptSubmit]]\ncommand = {json.dumps(command)}\n")
    result = cli("-p", "hi", *RUN, script=[text("ok")])
    clean(result)
    assert not (cli.tmp / "check.ran").exists()
    notices = [e["message"] for e in result.of_type("notice")]
    assert any("${CLAUDE_PLUGIN_ROOT}" in n and "not run" in n for n in notices), notices


def test_a_hook_with_its_plugin_root_gets_it_expanded_and_in_its_environment(cli: Cli) -> None:
    marker_script(cli, "check")
    root = cli.tmp / "plugin"
    command = f"{sys.executable} ${{CLAUDE_PLUGIN_ROOT}}/scripts/check.py"
    cli.config(
        f"[[hooks.UserPromptSubmit]]\ncommand = {json.dumps(command)}\nplugin_root = {json.dumps(str(root))}\n"
    )
    clean(cli("-p", "hi", *RUN, script=[text("ok")]))
    assert (cli.tmp / "check.ran").read_text() == str(root)


def test_a_commands_bang_line_naming_the_plugin_root_is_not_run(cli: Cli) -> None:
    marker_script(cli, "bang")
    commands = cli.workspace / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "setup.md").write_text(
        "---\ndescription: set up\n---\n"
        f"Status: !`{sys.executable} ${{CLAUDE_PLUGIN_ROOT}}/scripts/bang.py`\n"
        "Project: ${CLAUDE_PROJECT_DIR}\n",
        encoding="utf-8",
    )
    trusted = cli(
        "trust", "--yes"
    )  # the line itself is trusted: what holds it back is the variable
    assert trusted.returncode == 0, trusted.stderr
    result = cli("-p", "/setup", *RUN, script=[text("ok")])
    clean(result)
    assert not (cli.tmp / "bang.ran").exists()
    sent = json.dumps(result.requests[0]["messages"])
    assert f"Project: {cli.workspace}" in sent  # the variable ketch knows, expanded
    assert "was not run" in sent and "CLAUDE_PLUGIN_ROOT" in sent
