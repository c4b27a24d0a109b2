"""``--permission-prompt-command``: a program answers the approval questions of a
headless run. Judged by effects: which files exist afterwards."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.headless.headless_kit import Headless, events, of, tool_results

pytestmark = pytest.mark.timeout(120)

ANSWERER = """
import json, os, sys
from pathlib import Path
here = Path(sys.argv[1])
request = json.loads(sys.stdin.read())
request["env_names"] = sorted(os.environ)
with (here / "asked.jsonl").open("a") as log:
    log.write(json.dumps(request) + "\\n")
answers = json.loads((here / "answers.json").read_text())
answer = answers.pop(0)
(here / "answers.json").write_text(json.dumps(answers))
if answer == "HANG":
    (here / "hung.pid").write_text(str(os.getpid()))
    import time
    time.sleep(600)
if answer == "CRASH":
    print("answerer: cannot reach the approval service", file=sys.stderr)
    sys.exit(3)
sys.stdout.write(answer if isinstance(answer, str) else json.dumps(answer))
"""


def answerer(headless: Headless, answers: list[Any]) -> str:
    script = headless.scratch / "answer.py"
    script.write_text(ANSWERER, encoding="utf-8")
    (headless.scratch / "answers.json").write_text(json.dumps(answers), encoding="utf-8")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {shlex.quote(str(headless.scratch))}"


def asked(headless: Headless) -> list[dict[str, Any]]:
    path = headless.scratch / "asked.jsonl"
    return (
        [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        if path.exists()
        else []
    )


def writes(*paths: str) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "write_file", "input": {"path": p, "content": f"{p}\n"}}]}
        for p in paths
    ]
    return [*steps, {"text": "done"}]


def test_allowing_one_call_and_denying_the_next(headless: Headless) -> None:
    headless.script(writes("notes.md", "other.md"))
    command = answerer(
        headless,
        [
            {"decision": "allow"},
            {"decision": "deny", "message": "not that one: write to notes.md only"},
        ],
    )
    proc = headless.run(
        "-p",
        "write two files",
        "--output-format",
        "stream-json",
        "--permission-prompt-command",
        command,
        FOO_API_KEY="sk-canary",
    )
    assert proc.returncode == 0, proc.stderr
    assert (headless.workspace / "notes.md").read_text() == "notes.md\n"
    assert not (headless.workspace / "other.md").exists()
    first, second = asked(headless)
    session_id = of(events(proc.stdout), "session")[0]["session_id"]
    assert first["tool"] == "write_file" and first["input"] == {
        "path": "notes.md",
        "content": "notes.md\n",
    }
    assert (
        first["session_id"] == session_id
        and first["reason"]
        and first["scope"].startswith("write(")
    )
    assert "FOO_API_KEY" not in first["env_names"]  # the child environment drops secrets
    denied = tool_results(headless.requests()[-1])[-1]
    assert denied["ok"] is False and "not that one: write to notes.md only" in denied["output"]
    end = of(events(proc.stdout), "turn_end")[0]
    assert [d["tool_input"]["path"] for d in end["permission_denials"]] == ["other.md"]


def test_scope_session_allows_the_scope_for_the_rest_of_the_session(headless: Headless) -> None:
    (headless.workspace / "notes.md").write_text("notes.md\n")
    headless.script(
        [
            {"tool_calls": [{"name": "read_file", "input": {"path": "notes.md"}}]},
            {
                "tool_calls": [
                    {"name": "write_file", "input": {"path": "notes.md", "content": "one\n"}}
                ]
            },
            {
                "tool_calls": [
                    {"name": "write_file", "input": {"path": "notes.md", "content": "two\n"}}
                ]
            },
            {"text": "done"},
        ]
    )
    command = answerer(headless, [{"decision": "allow", "scope": "session"}])
    proc = headless.run("-p", "rewrite", "--permission-prompt-command", command)
    assert proc.returncode == 0, proc.stderr
    assert len(asked(headless)) == 1  # the second write was within the session's scope
    assert (headless.workspace / "notes.md").read_text() == "two\n"


def test_a_hanging_command_is_denied_after_its_timeout_and_killed(headless: Headless) -> None:
    headless.script(writes("notes.md"))
    command = answerer(headless, ["HANG"])
    started = time.monotonic()
    proc = headless.run(
        "-p",
        "write",
        "--output-format",
        "stream-json",
        "--permission-prompt-command",
        command,
        "--permission-prompt-timeout",
        "2",
    )
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    assert not (headless.workspace / "notes.md").exists()
    assert took >= 2
    notices = [e["message"] for e in of(events(proc.stdout), "notice")]
    assert any("no answer within 2 s" in n for n in notices)
    pid = int((headless.scratch / "hung.pid").read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the hanging permission prompt command was left running")


def test_the_timeout_comes_from_the_config_too(headless: Headless) -> None:
    config = Path(os.environ["KETCH_CONFIG_DIR"]) / "config.toml"
    config.write_text(config.read_text() + "[headless]\npermission_prompt_timeout = 1\n")
    headless.script(writes("notes.md"))
    command = answerer(headless, ["HANG"])
    started = time.monotonic()
    proc = headless.run("-p", "write", "--permission-prompt-command", command)
    assert time.monotonic() - started < 30
    assert "no answer within 1 s" in proc.stderr
    assert not (headless.workspace / "notes.md").exists()


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("", "gave no answer"),
        ("yes please", "did not answer with JSON"),
        ({"decision": "maybe"}, "'maybe'"),
        ({"decision": "allow", "scope": "always"}, "'always'"),
        ("CRASH", "failed (exit 3) (stderr: answerer: cannot reach the approval service)"),
    ],
)
def test_anything_but_a_clear_answer_denies(headless: Headless, answer: Any, why: str) -> None:
    headless.script(writes("notes.md"))
    command = answerer(headless, [answer])
    proc = headless.run("-p", "write", "--permission-prompt-command", command)
    assert not (headless.workspace / "notes.md").exists()
    assert why in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_bad_timeout_is_a_usage_error(headless: Headless) -> None:
    proc = headless.run(
        "-p", "write", "--permission-prompt-command", "true", "--permission-prompt-timeout", "0"
    )
    assert (
        proc.returncode == 2
        and "--permission-prompt-timeout 0.0: the permission prompt timeout must be a positive number"
        in proc.stderr
    )
    assert headless.requests() == []
