"""Checkpoints of names that are not UTF-8, and of the workspace root's own mode.

A file name is bytes; ``bad\\xff.txt`` has a byte that is no UTF-8. Shell calls in such
a workspace still get checkpoints, and undo puts such files back under their exact
names. A ``chmod`` of the workspace root is undone too."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.checkpoints.kit import env_for, ketch, turn

BAD = b"bad\xff.txt"
BAD_DIR = b"dir\xfe"


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("readme\n")
    raw = os.fsencode(ws)
    with open(os.path.join(raw, BAD), "wb") as handle:
        handle.write(b"one\n")
    os.mkdir(os.path.join(raw, BAD_DIR))
    with open(os.path.join(raw, BAD_DIR, b"inner\xfd"), "wb") as handle:
        handle.write(b"inner\n")
    return ws


def _names(ws: Path) -> dict[bytes, bytes]:
    out = {}
    for dirpath, _dirs, files in os.walk(os.fsencode(ws)):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as handle:
                out[os.path.relpath(path, os.fsencode(ws))] = handle.read()
    return out


def test_a_shell_call_among_non_utf8_names_is_checkpointed_and_undone(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    before = _names(ws)
    script = [
        {
            "tool_calls": [
                {"name": "shell", "input": {"command": "rm -r bad* dir* && echo new > README.md"}}
            ]
        },
        {"text": "removed them"},
    ]
    env = env_for(tmp_path, script)
    result = turn("remove the odd files", cwd=ws, env=env)
    assert _names(ws) == {b"README.md": b"new\n"}, "the turn did not run as scripted"
    assert not result["errors"], result["errors"]

    undo = ketch("sessions", "undo", "--json", cwd=ws, env=env)
    assert undo.returncode == 0, undo.stderr
    assert "Traceback" not in undo.stderr
    report = json.loads(undo.stdout)
    assert report["ok"], report
    assert {r["path"] for r in report["restored"]} >= {"bad\\xff.txt", "dir\\xfe/inner\\xfd"}
    assert _names(ws) == before  # the exact bytes of every name and every file


def test_a_chmod_of_the_workspace_root_is_undone(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    ws.chmod(0o755)
    (ws / "a.txt").write_text("a\n")
    script = [
        {"tool_calls": [{"name": "shell", "input": {"command": "chmod 700 ."}}]},
        {"text": "tightened"},
    ]
    env = env_for(tmp_path, script)
    turn("tighten it", cwd=ws, env=env)
    assert ws.stat().st_mode & 0o7777 == 0o700, "the turn did not run as scripted"
    undo = ketch("sessions", "undo", "--json", cwd=ws, env=env)
    assert undo.returncode == 0, undo.stderr
    report = json.loads(undo.stdout)
    assert [(r["path"], r["change"]) for r in report["restored"]] == [(".", "mode")], report
    assert ws.stat().st_mode & 0o7777 == 0o755
