"""A hook that leaves a background child: its answer counts as soon as it exits, the
child dies with the hook's process group, and ketch exits without a traceback."""

from __future__ import annotations

import json
import time

from ketch.testing import call, text
from tests.agents.conftest import Cli, clean
from tests.hooks.conftest import pre_deny
from tests.stdio_kit import processes_with, wait_gone

RUN = ("--provider", "scripted", "--output-format", "stream-json")


def test_a_hook_that_leaves_a_child_answers_at_once_and_the_child_is_ended(cli: Cli) -> None:
    marker = "318.25"
    deny = json.dumps(pre_deny("not today"))
    command = f"(sleep {marker} &); echo '{deny}'"
    cli.config(
        "[[hooks.PreToolUse]]\n"
        'matcher = "write_file"\n'
        f"command = {json.dumps(command)}\n"
        "timeout = 30\n"
    )
    began = time.monotonic()
    result = cli(
        "-p",
        "go",
        *RUN,
        "--profile",
        "full-access",
        script=[call("write_file", {"path": "a.txt", "content": "x"}), text("ok")],
    )
    took = time.monotonic() - began
    clean(result)
    assert "Event loop is closed" not in result.stderr
    # The answer counted (the write was blocked with the hook's reason), long before
    # the hook's 30 s timeout.
    (blocked,) = result.of_type("tool_result")
    assert blocked["outcome"] == "blocked" and "not today" in blocked["output"]
    assert not (cli.workspace / "a.txt").exists()
    assert took < 20, took
    assert wait_gone(marker) == [], "the hook's background child outlived it"
    assert processes_with(marker) == []
