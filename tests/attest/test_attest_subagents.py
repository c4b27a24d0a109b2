"""A subagent's calls are the session's too: the receipt lists them, tagged with the
subagent, with their own decisions, and the files they changed are subjects."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.attest.kit import PLUGINS, env_for, ketch, make_workspace, needs_git, statement

pytestmark = [needs_git, pytest.mark.slow]


def test_a_subagents_calls_are_in_the_receipt(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    script = [
        {
            "when": "PARENT",
            "tool_calls": [
                {"name": "agent", "input": {"description": "write", "prompt": "CHILD write it"}}
            ],
        },
        {
            "when": "CHILD",
            "tool_calls": [
                {"name": "write_file", "input": {"path": "child.txt", "content": "c\n"}}
            ],
        },
        {"when": "CHILD", "text": "written"},
        {"when": "PARENT", "text": "done"},
    ]
    env = env_for(tmp_path, script, KETCH_PLUGINS=",".join([*PLUGINS, "agents", "scripted"]))
    done = ketch(
        "-p", "PARENT go", "--provider", "scripted", "--profile", "assisted", cwd=ws, env=env
    )
    assert done.returncode == 0, done.stderr
    assert (ws / "child.txt").read_text() == "c\n"
    receipt = tmp_path / "receipt.json"
    assert ketch("attest", "--out", str(receipt), cwd=ws, env=env).returncode == 0
    predicate = statement(receipt)["predicate"]
    (parent,) = [c for c in predicate["calls"] if c["tool"] == "agent"]
    (child,) = [c for c in predicate["calls"] if c["tool"] == "write_file"]
    assert "agent" not in parent and child["agent"]
    assert child["turn"] == 1 and child["decision"] == "allow" and child["decidedBy"] == "profile"
    assert child["changed"] == ["child.txt"] and child["outcome"] == "succeeded"
    assert "child.txt" in {s["name"] for s in statement(receipt)["subject"]}
    assert ketch("verify", str(receipt), cwd=ws, env=env).returncode == 0
