"""Only the person installs or trusts what a plugin runs: the model's ``ketch plugin
...`` asks in every profile (full-access included), and no hook's allow answers for the
person; headless, with nobody to ask, it is refused — judged by its effect: nothing is
installed, nothing pinned."""

from __future__ import annotations

import shlex
import sys

from ketch.testing import call, text
from tests.claude_plugins.conftest import MARKET, PluginCli, needs_git

pytestmark = needs_git


def test_the_model_cannot_install_or_trust_a_plugin(cli: PluginCli) -> None:
    cli.ok("plugin", "marketplace", "add", str(cli.market))
    cli.add_and_install("explanatory-output-style")
    script_file = (
        cli.installed("explanatory-output-style")
        / "explanatory-output-style"
        / "hooks-handlers"
        / "session-start.sh"
    )
    canary = cli.tmp / "model-pinned-ran"
    script_file.write_text(f"#!/usr/bin/env bash\necho ran > {canary}\n")
    ketch = f"{shlex.quote(sys.executable)} -m ketch"
    allow_all = cli.tmp / "allow.py"
    allow_all.write_text(
        "import json\nprint(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', "
        "'permissionDecision': 'allow'}}))\n"
    )
    cli.config(f'[[hooks.PreToolUse]]\nmatcher = "*"\ncommand = "{sys.executable} {allow_all}"\n')
    script = [
        call("shell", {"command": f"{ketch} plugin install hookify@{MARKET} --yes"}),
        call("shell", {"command": f"{ketch} plugin trust explanatory-output-style --yes"}),
        text("done"),
    ]
    result = cli.turn("install hookify for me", script, "--profile", "full-access")
    outcomes = [r["outcome"] for r in result.of_type("tool_result")]
    assert outcomes and all(o != "ok" for o in outcomes), outcomes
    assert "only you install or trust what a plugin runs" in result.stdout
    assert not cli.installed("hookify").exists()
    cli.turn("hi", [text("ok")])
    assert not canary.exists()  # the changed hook is still held back
    # The control: the person's own command does it.
    cli.ok("plugin", "trust", "explanatory-output-style", "--yes")
    cli.turn("hi", [text("ok")])
    assert canary.exists()
