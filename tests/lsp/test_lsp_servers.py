"""Issue 29's acceptance with real language servers (basedpyright, ruff from PyPI):
diagnostics after an edit reach the next request and go when fixed; definition and
references across two files; rename shown as a multi-file diff, applied on approval
and undone by ``ketch sessions undo``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from ketch.policy import ApprovalAnswer, ApprovalRequest
from ketch.testing import Harness, call, text
from ketch.testing.cli import run_cli
from ketch.testing.harness import isolated_env
from tests.lsp.kit import PASSPHRASE, PLUGINS, basedpyright, project, results, tool_outputs

SLOW = "[lsp]\ndiagnostics_timeout = 45\nstart_timeout = 60\nrequest_timeout = 45\n"
# The key wrapped under a passphrase: the in-process session and the ``ketch`` process
# that undoes it open the same store.
STORE = '[storage]\nkey = "passphrase"\n'


def test_a_type_error_reaches_the_next_request_and_goes_when_fixed(tmp_path: Path) -> None:
    basedpyright()
    ws = project(tmp_path / "ws")
    env = {**isolated_env(tmp_path), "KETCH_PASSPHRASE": PASSPHRASE}
    Path(env["KETCH_CONFIG_DIR"]).mkdir(parents=True)
    (Path(env["KETCH_CONFIG_DIR"]) / "config.toml").write_text(SLOW)
    script = [
        call("read_file", {"path": "b.py"}),
        call(
            "edit_file",
            {"path": "b.py", "old_string": "message: str", "new_string": "message: int"},
        ),
        call(
            "edit_file",
            {"path": "b.py", "old_string": "message: int", "new_string": "message: str"},
        ),
        text("done"),
    ]
    done = run_cli(
        [
            "-p",
            "fix b.py",
            "--provider",
            "scripted",
            "--profile",
            "full-access",
            "--output-format",
            "stream-json",
        ],
        cwd=ws,
        env=env,
        script=script,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    requests = done.requests
    assert len(requests) == 4
    after_error = tool_outputs(requests[2])[-1]
    # The file, the line and the checker's message, as the model receives them.
    assert "[lsp] 1 new problem in b.py" in after_error, after_error
    assert "b.py:3:16: error:" in after_error
    assert 'Type "str" is not assignable to declared type "int"' in after_error
    after_fix = tool_outputs(requests[3])[-1]
    assert after_fix.startswith("Edited b.py")
    assert "[lsp]" not in after_fix and "error" not in after_fix
    # The person saw it too: a notice after that call's result, before the next call.
    events = done.events
    index = next(
        i for i, e in enumerate(events) if e["type"] == "tool_result" and "[lsp]" in e["output"]
    )
    following = events[index + 1 :]
    until = next(i for i, e in enumerate(following) if e["type"] == "tool_call")
    shown = [e["message"] for e in following[:until] if e["type"] == "notice"]
    assert len(shown) == 1 and "b.py:3:16: error:" in shown[0]


class Recorder:
    def __init__(self) -> None:
        self.requests: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.requests.append(request)
        return ApprovalAnswer(approved=True, origin="person")


def _harness(tmp_path: Path, script: list[dict[str, Any]], **kwargs: Any) -> Harness:
    project(tmp_path / "ws")
    return Harness.create(
        tmp_path,
        script=script,
        bundled=PLUGINS,
        config=STORE + SLOW,
        env={"KETCH_PASSPHRASE": PASSPHRASE},
        **kwargs,
    )


def test_definition_references_and_a_rename_undone(tmp_path: Path) -> None:
    basedpyright()
    script = [
        call("definition", {"path": "b.py", "line": 3, "symbol": "greet"}),
        call("references", {"path": "a.py", "line": 1, "symbol": "greet"}),
        call("rename", {"path": "a.py", "line": 1, "symbol": "greet", "new_name": "welcome"}),
        text("renamed"),
    ]
    harness = _harness(tmp_path, script)
    ws = harness.workspace
    approver = Recorder()
    end = asyncio.run(harness.turn("rename greet", approver=approver))
    assert end.stop_reason == "end_turn"

    definition = results(harness.events, "definition")[0]
    assert definition.ok, definition.output
    assert definition.output.splitlines()[0] == "a.py:1:5: def greet(name: str) -> str:"

    references = results(harness.events, "references")[0]
    assert references.ok, references.output
    lines = references.output.splitlines()
    assert lines[0] == "3 references in 2 files:"
    assert "a.py:1:5: def greet(name: str) -> str:" in lines
    assert "b.py:1:15: from a import greet" in lines
    assert 'b.py:3:16: message: str = greet("bob")' in lines

    # The read-only tools ran without asking (manual profile); the rename asked, with
    # the diff of both files.
    assert [r.call.tool for r in approver.requests] == ["rename"]
    preview = approver.requests[0].preview or ""
    assert "--- a/a.py" in preview and "--- a/b.py" in preview
    assert "+def welcome(name: str) -> str:" in preview
    assert "+from a import welcome" in preview
    writes = sorted(a.target for a in approver.requests[0].call.accesses if a.effect == "write")
    assert writes == sorted(str(ws.resolve() / n) for n in ("a.py", "b.py"))

    renamed = results(harness.events, "rename")[0]
    assert renamed.ok, renamed.output
    assert renamed.diff == preview
    assert (ws / "a.py").read_text() == A_RENAMED
    assert (ws / "b.py").read_text() == 'from a import welcome\n\nmessage: str = welcome("bob")\n'
    session_id = harness.session.id
    harness.kernel.end(harness.session)  # its servers stop with it

    undone = run_cli(
        ["sessions", "undo", session_id, "--json"],
        cwd=ws,
        env={**harness.environ},
        timeout=120,
    )
    assert undone.returncode == 0, undone.stdout + undone.stderr
    report = json.loads(undone.stdout)
    assert sorted(r["path"] for r in report["restored"]) == ["a.py", "b.py"]
    assert (ws / "a.py").read_text() == 'def greet(name: str) -> str:\n    return "hi " + name\n'
    assert (ws / "b.py").read_text() == 'from a import greet\n\nmessage: str = greet("bob")\n'


A_RENAMED = 'def welcome(name: str) -> str:\n    return "hi " + name\n'


def test_hover_symbols_and_workspace_diagnostics(tmp_path: Path) -> None:
    basedpyright()
    script = [
        call("hover", {"path": "b.py", "line": 3, "symbol": "greet"}),
        call("symbols", {"path": "a.py"}),
        call("symbols", {"query": "greet"}),
        call("diagnostics", {}),
        text("done"),
    ]
    harness = _harness(tmp_path, script, settings={"profile": "manual"})
    (harness.workspace / "c.py").write_text("count: int = 'three'\n")
    end = asyncio.run(harness.turn("look"))
    assert end.stop_reason == "end_turn"
    hover, outline, search, diagnostics = results(harness.events)
    assert hover.ok and "def greet(name: str) -> str" in hover.output, hover.output
    assert outline.ok and outline.output.splitlines()[0] == "function greet (line 1)", (
        outline.output
    )
    assert search.ok and "function greet" in search.output and "a.py:1" in search.output, (
        search.output
    )
    assert diagnostics.ok, diagnostics.output
    assert diagnostics.output.startswith("1 error, 0 warnings in 3 files checked:"), (
        diagnostics.output
    )
    assert "c.py:1:14: error:" in diagnostics.output


def test_a_rename_right_after_the_server_starts_finds_every_file(tmp_path: Path) -> None:
    """A server that has just started has not indexed the project: the files that name
    the symbol are handed to it first, so the rename still covers them all."""
    basedpyright()
    script = [
        call("rename", {"path": "a.py", "line": 1, "symbol": "greet", "new_name": "welcome"}),
        text("renamed"),
    ]
    harness = _harness(tmp_path, script, settings={"profile": "full-access"})
    assert asyncio.run(harness.turn("rename greet")).stop_reason == "end_turn"
    harness.kernel.end(harness.session)
    renamed = results(harness.events, "rename")[0]
    assert renamed.ok, renamed.output
    assert renamed.output.startswith("Renamed greet to welcome (pyright): 3 edits in 2 files:")
    assert (harness.workspace / "b.py").read_text() == (
        'from a import welcome\n\nmessage: str = welcome("bob")\n'
    )
