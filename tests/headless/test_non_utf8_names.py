"""A workspace with a file name that is not UTF-8 (``bad\\xff.txt``): the project context
is still built, ``list_dir``/``glob``/``read_file``/``grep`` show and use the name escaped, and the
store records the results (the turn ends normally; the session exports)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.headless.headless_kit import Headless, tool_results

pytestmark = pytest.mark.timeout(120)


def test_non_utf8_names_are_shown_escaped_used_and_recorded(headless: Headless) -> None:
    ws = os.fsencode(headless.workspace)
    (headless.workspace / "AGENTS.md").write_text("INSTRUCTIONS-CANARY-7\n", encoding="utf-8")
    with open(os.path.join(ws, b"bad\xff.txt"), "wb") as handle:
        handle.write(b"odd content\n")
    os.mkdir(os.path.join(ws, b"dir\xfe"))
    with open(os.path.join(ws, b"dir\xfe", b"inner.txt"), "wb") as handle:
        handle.write(b"inner\n")
    headless.script(
        [
            {"tool_calls": [{"name": "list_dir", "input": {"path": "."}}]},
            {"tool_calls": [{"name": "glob", "input": {"pattern": "**/*.txt"}}]},
            {"tool_calls": [{"name": "read_file", "input": {"path": "bad\\xff.txt"}}]},
            {"tool_calls": [{"name": "list_dir", "input": {"path": "dir\\xfe"}}]},
            {"tool_calls": [{"name": "grep", "input": {"pattern": "odd"}}]},
            {"text": "seen"},
        ]
    )
    proc = headless.run("-p", "look around", "--output-format", "json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "UnicodeEncodeError" not in proc.stderr
    assert json.loads(proc.stdout)["stop_reason"] == "end_turn"
    requests = headless.requests()
    system = requests[0]["system"]
    assert "INSTRUCTIONS-CANARY-7" in system  # the instruction file is in the prompt
    assert "bad\\xff.txt" in system  # the overview lists the odd name, escaped
    outputs = [r["output"] for r in tool_results(requests[-1])]
    listing, found, read, inner, grepped = outputs
    assert "bad\\xff.txt  (12 bytes)" in listing and "dir\\xfe/" in listing
    assert found.splitlines() == ["bad\\xff.txt", "dir\\xfe/inner.txt"]
    assert "odd content" in read
    assert "inner.txt" in inner
    assert "bad\\xff.txt" in grepped
    session = json.loads(proc.stdout)["session_id"]
    export = subprocess.run(
        [sys.executable, "-m", "ketch", "sessions", "export", session],
        cwd=headless.workspace,
        env=headless.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert export.returncode == 0, export.stderr
    assert "bad\\xff.txt" in export.stdout
