"""What checkpoints keep, and how: nothing readable on disk, nothing under ``.git``,
incremental (an unchanged file costs a stat), ``.gitignore`` respected, retention and
garbage collection, and a checkpoint that cannot be taken said once."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from ketch import hookimpl
from ketch.errors import KetchError
from ketch.testing import Harness, text
from ketch_checkpoints.scan import Scanner
from ketch_checkpoints.timeline import COLLECTION, Timeline
from ketch_checkpoints.tree import Trees
from tests.checkpoints.kit import (
    CANARY,
    acceptance_script,
    env_for,
    files_of,
    git_state,
    ketch,
    leaks,
    make_workspace,
    requests,
    turn,
    user_texts,
)


def write(n: int, content: str) -> dict[str, Any]:
    """A call that (over)writes f{n}.txt, through the shell (write_file wants a read first)."""
    return {
        "tool_calls": [
            {
                "name": "shell",
                "input": {
                    "command": f"printf %s {content.strip()!r} > f{n}.txt && echo >> f{n}.txt"
                },
            }
        ]
    }


def test_nothing_of_a_files_content_or_name_is_readable_in_the_state_dir(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    secret_dir = ws / f"dir-{CANARY}-name"
    secret_dir.mkdir()
    (secret_dir / "data.txt").write_text(f"{CANARY}-content-that-stays\n" * 50)
    (ws / "doomed.txt").write_text(f"{CANARY}-content-deleted\n")
    git_before = git_state(ws)
    script = [
        {
            "tool_calls": [
                {
                    "name": "shell",
                    "input": {"command": f"rm doomed.txt && echo {CANARY[::-1]} > fresh.txt"},
                }
            ]
        },
        text("ok"),
    ]
    env = env_for(tmp_path, script)
    result = turn("remove it", cwd=ws, env=env)
    undo = ketch("sessions", "undo", cwd=ws, env=env)
    assert undo.returncode == 0, undo.stderr
    assert (ws / "doomed.txt").read_text() == f"{CANARY}-content-deleted\n"  # it was really kept...
    state, cache = Path(os.environ["KETCH_STATE_DIR"]), Path(os.environ["KETCH_CACHE_DIR"])
    assert (state / "sessions.db").exists()
    assert leaks(CANARY, state, cache) == []  # ...and never in the clear
    assert leaks(CANARY[::-1], state, cache) == []
    assert git_state(ws) == git_before
    assert result["session_id"]


def test_a_checkpoint_reads_only_what_changed(harness: Any) -> None:
    h: Harness = harness([])
    ws = h.workspace
    old = time.time() - 3600  # well before any checkpoint: nothing is "too recent to trust"
    for n in range(60):
        path = ws / "pkg" / f"m{n // 10}" / f"f{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"x = {n}\n")
        os.utime(path, (old, old))
    blobs = h.kernel.store.blobs  # type: ignore[union-attr]
    scanner = Scanner(ws, blobs, Trees(blobs), max_file_size=1 << 20, max_files=1000)
    first = scanner.scan()
    assert (first.files, first.read) == (60, 60) and first.written > 0
    second = scanner.scan()
    assert (second.read, second.written, second.root) == (
        0,
        0,
        first.root,
    )  # a stat each, no read, nothing new
    target = ws / "pkg" / "m3" / "f31.py"
    target.write_text("x = 'changed'\n")
    third = scanner.scan()
    assert third.read == 1 and third.root != first.root
    fourth = scanner.scan()
    assert fourth.read == 1  # changed moments ago: read once more, then trusted
    os.utime(target, (old, old))
    assert scanner.scan().read == 1 and scanner.scan().read == 0


def test_gitignored_files_are_not_captured_and_ignore_changes_are_seen(harness: Any) -> None:
    script = [
        {
            "tool_calls": [
                {
                    "name": "shell",
                    "input": {
                        "command": "rm -r build kept.txt junk.tmp sub/local.txt sub/shared.txt"
                    },
                }
            ]
        },
        text("ok"),
    ]
    h: Harness = harness(script)
    ws = h.workspace
    (ws / ".gitignore").write_text("build/\n*.tmp\n")
    (ws / "build").mkdir()
    (ws / "build" / "out.bin").write_bytes(b"\x00" * 10)
    (ws / "kept.txt").write_text("kept\n")
    (ws / "junk.tmp").write_text("junk\n")
    (ws / "sub").mkdir()
    (ws / "sub" / ".gitignore").write_text("local.txt\n")
    (ws / "sub" / "local.txt").write_text("local\n")
    (ws / "sub" / "shared.txt").write_text("shared\n")
    h.run("clean up")
    assert not (ws / "kept.txt").exists()
    rows = Timeline.read(h.kernel.store.blobs.records(h.session.id, COLLECTION))  # type: ignore[union-attr]
    assert sorted(rows.changed_by(rows.changed_turns()[0])) == ["kept.txt", "sub/shared.txt"]

    blobs = h.kernel.store.blobs  # type: ignore[union-attr]
    scanner = Scanner(ws, blobs, Trees(blobs), max_file_size=1 << 20, max_files=1000)
    (ws / "sub" / "local.txt").write_text("local again\n")
    names = {p for p, _ in Trees(blobs).walk(scanner.scan().root)}
    assert "sub/local.txt" not in names
    (ws / "sub" / ".gitignore").write_text("# nothing ignored here any more\n")
    names = {p for p, _ in Trees(blobs).walk(scanner.scan().root)}
    assert "sub/local.txt" in names and ".git" not in names


def test_retention_keeps_the_last_steps_and_collects_what_nothing_refers_to(harness: Any) -> None:
    h: Harness = harness(
        [write(1, "v1\n"), text("1"), write(1, "v2\n"), text("2"), write(1, "v3\n"), text("3")],
        settings={"checkpoints": {"keep": 2}},
    )
    (h.workspace / "f1.txt").write_text("v0\n")
    blobs = h.kernel.store.blobs  # type: ignore[union-attr]
    for n in (1, 2, 3):
        h.run(f"turn {n}")
    line = Timeline.read(blobs.records(h.session.id, COLLECTION))
    assert len(line.windows) == 2 and len(line.changed_turns()) == 2  # turn 1 was dropped, whole
    v0, v1 = blobs.blob_id(b"v0\n"), blobs.blob_id(b"v1\n")
    assert not blobs.missing([v0, v1])  # within the grace period, nothing is collected yet
    blobs.collect_garbage(grace=0)
    assert blobs.missing([v0, v1]) == {v0}  # v0 only the dropped turn knew; v1 is before turn 2
    assert not blobs.missing([blobs.blob_id(b"v2\n"), blobs.blob_id(b"v3\n")])


def test_enabled_false_takes_no_checkpoint(harness: Any) -> None:
    h: Harness = harness(
        [write(1, "x\n"), text("ok")], settings={"checkpoints": {"enabled": False}}
    )
    h.run("write")
    assert (h.workspace / "f1.txt").exists()
    assert h.kernel.store.blobs.records(h.session.id, COLLECTION) == []  # type: ignore[union-attr]
    assert h.of_type("changes") == []


def test_a_checkpoint_that_cannot_be_taken_is_said_once_and_the_calls_still_run(
    harness: Any,
) -> None:
    h: Harness = harness([write(1, "a\n"), write(2, "b\n"), text("ok")])

    def full(*args: Any, **kwargs: Any) -> int:
        raise KetchError("the session store is unavailable: database or disk is full")

    h.kernel.store.blobs.put = full  # type: ignore[union-attr, method-assign]
    h.run("write two files")
    assert (h.workspace / "f1.txt").read_text() == "a\n" and (
        h.workspace / "f2.txt"
    ).read_text() == "b\n"
    said = [e.message for e in h.of_type("notice") if "checkpoint" in e.message]
    assert len(said) == 1, said
    assert (
        "no checkpoint before shell: the session store is unavailable: database or disk is full"
        in said[0]
    )
    assert "What this step changes cannot be undone" in said[0]


def test_no_store_means_checkpoints_off_said_once(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    script = [write(1, "a\n"), write(2, "b\n"), text("ok")]
    env = env_for(tmp_path, script, KETCH_STATE_DIR=str(blocker / "state"))
    proc = ketch(
        "-p", "write", "--provider", "scripted", "--profile", "full-access", cwd=ws, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert (ws / "f1.txt").exists() and (ws / "f2.txt").exists()
    assert proc.stderr.count("checkpoints are off") == 1, proc.stderr
    assert "/undo and /rewind cannot revert this session's changes" in proc.stderr


def test_a_person_edit_between_two_of_ketchs_calls_is_a_conflict(harness: Any) -> None:
    """The person changes the file while the model thinks: undoing ketch's two edits would
    undo theirs too, so the file is left alone."""

    class Person:
        calls = 0

        @hookimpl(tryfirst=True)
        def ketch_before_tool_effect(self, session: Any, call: Any) -> None:
            Person.calls += 1
            if Person.calls == 2:  # between ketch's first and second call
                with (session.workspace / "shared.txt").open("a") as handle:
                    handle.write("the person's line\n")

    script = [
        {
            "tool_calls": [
                {
                    "name": "shell",
                    "input": {"command": "echo ketch one >> shared.txt && echo x > other.txt"},
                }
            ]
        },
        {"tool_calls": [{"name": "shell", "input": {"command": "echo ketch two >> shared.txt"}}]},
        text("ok"),
    ]
    h: Harness = harness(script, plugins=[("person", Person())])
    (h.workspace / "shared.txt").write_text("start\n")
    h.run("append twice")
    import asyncio

    from ketch_checkpoints import operations
    from ketch_checkpoints.operations import Target

    target = Target(
        blobs=h.kernel.store.blobs,
        session_id=h.session.id,
        workspace=h.workspace,
        transcript=h.session.transcript,
        rewound=set(),
        max_file_size=1 << 20,
    )  # type: ignore[union-attr]
    report = asyncio.run(operations.undo(target, keep_changed=True))
    assert [c["path"] for c in report["kept"]] == ["shared.txt"]
    assert "between ketch's calls" in report["kept"][0]["reason"]
    assert [r["path"] for r in report["restored"]] == ["other.txt"]
    assert (
        h.workspace / "shared.txt"
    ).read_text() == "start\nketch one\nthe person's line\nketch two\n"


def test_a_directory_turned_symlink_is_never_followed(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "sub").mkdir()
    (ws / "sub" / "file.txt").write_text("inside\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "file.txt").write_text("outside canary\n")
    script = [
        {"tool_calls": [{"name": "shell", "input": {"command": "echo changed > sub/file.txt"}}]},
        text("ok"),
    ]
    env = env_for(tmp_path, script)
    turn("change it", cwd=ws, env=env)
    (ws / "sub" / "file.txt").unlink()
    (ws / "sub").rmdir()
    (ws / "sub").symlink_to(outside)  # someone swaps the directory for a link out of the workspace
    for flags in ((), ("--force",)):
        proc = ketch("sessions", "undo", "--json", *flags, cwd=ws, env=env)
        assert proc.stdout.startswith("{"), proc.stderr
        report = json.loads(proc.stdout)
        assert [s["path"] for s in report["skipped"]] == ["sub/file.txt"], report
        assert "symbolic link" in report["skipped"][0]["reason"]
        assert (outside / "file.txt").read_text() == "outside canary\n"


def test_a_file_over_max_file_size_is_reported_not_restored(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "big.bin").write_bytes(b"B" * 5000)
    (ws / "small.txt").write_text("small\n")
    (tmp_path / "home-config").mkdir()
    script = [
        {"tool_calls": [{"name": "shell", "input": {"command": "rm big.bin small.txt"}}]},
        text("ok"),
    ]
    env = env_for(tmp_path, script)
    config = Path(env["KETCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text('[checkpoints]\nmax_file_size = "1KiB"\n')
    turn("remove", cwd=ws, env=env)
    proc = ketch("sessions", "undo", "--json", cwd=ws, env=env)
    report = json.loads(proc.stdout)
    assert [r["path"] for r in report["restored"]] == ["small.txt"]
    assert [s["path"] for s in report["skipped"]] == [
        "big.bin"
    ] and "larger than max_file_size" in report["skipped"][0]["reason"]
    assert (ws / "small.txt").read_text() == "small\n" and not (ws / "big.bin").exists()


def test_the_model_is_told_what_an_undo_reverted(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    env = env_for(tmp_path, [*acceptance_script(), text("noted")])
    turn("change four files", cwd=ws, env=env)
    assert ketch("sessions", "undo", cwd=ws, env=env).returncode == 0
    turn("what now?", cwd=ws, env=env, more=("--continue",))
    last = user_texts(requests(tmp_path)[-1])[-1]
    assert last.startswith("what now?")
    assert "reverted the file changes of turn 1" in last and "tool.sh" in last and "old.log" in last
    turn("and now?", cwd=ws, env=env, more=("--continue",))
    assert "reverted" not in user_texts(requests(tmp_path)[-1])[-1]  # told once


def test_deleting_a_session_deletes_its_checkpoints(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    env = env_for(tmp_path, acceptance_script())
    session_id = turn("change", cwd=ws, env=env)["session_id"]
    listed = json.loads(ketch("sessions", "turns", session_id, "--json", cwd=ws, env=env).stdout)
    assert listed["turns"][0]["files_changed"]
    assert ketch("sessions", "delete", session_id, cwd=ws, env=env).returncode == 0
    import sqlite3

    conn = sqlite3.connect(Path(os.environ["KETCH_STATE_DIR"]) / "sessions.db")
    assert (
        conn.execute(
            "SELECT count(*) FROM blob_records WHERE session_id = ?", (session_id,)
        ).fetchone()[0]
        == 0
    )
    assert (
        conn.execute(
            "SELECT count(*) FROM blob_refs WHERE session_id = ?", (session_id,)
        ).fetchone()[0]
        == 0
    )
    assert files_of(ws)  # and the workspace is not touched


@pytest.mark.parametrize("bad", ["../escape", ".git/config", "a/../../b", "/abs"])
def test_restore_refuses_paths_outside_the_plain_workspace(tmp_path: Path, bad: str) -> None:
    from ketch_checkpoints.restore import Unsafe, Workspace

    ws = Workspace(tmp_path, blobs=None, max_file_size=10)  # type: ignore[arg-type]
    try:
        with pytest.raises(Unsafe):
            ws.parent(bad, create=True)
    finally:
        ws.close()
    assert not (tmp_path.parent / "escape").exists() and not (tmp_path / ".git").exists()
