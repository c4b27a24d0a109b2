"""Issue 33 items 8 and 9: ``ketch sessions verify`` covers the checkpoint blobs and an
empty database beside its key; a full disk is named as a full disk.

Real files and real processes: the blob table emptied with SQL, ``sessions.db``
truncated to 0 bytes beside ``sessions.key``, and a real tmpfs of a few hundred KiB
filled to the last byte (mounting needs root, as CI is; elsewhere it skips).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ketch.testing import call, text
from tests.store.conftest import cli_env, db_path, make_passphrase_store, run_ketch
from tests.store.test_store_passphrase import PASSPHRASE, no_dbus_env


def test_an_emptied_blob_table_is_named_by_verify(tmp_path: Path) -> None:
    from tests.checkpoints.kit import acceptance_script, env_for, ketch, make_workspace, turn

    ws = make_workspace(tmp_path)
    env = env_for(tmp_path, acceptance_script())
    turn("change four files", cwd=ws, env=env)
    clean = ketch("sessions", "verify", "--all", cwd=ws, env=env)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    with sqlite3.connect(Path(env["KETCH_STATE_DIR"]) / "sessions.db") as raw:
        assert raw.execute("DELETE FROM blobs").rowcount > 0
    found = ketch("sessions", "verify", "--all", cwd=ws, env=env)
    assert found.returncode == 1, found.stdout
    assert "FAILED  store" in found.stdout and "missing from the store" in found.stdout
    assert "undo" in found.stdout and "intact" not in found.stdout.split("FAILED")[0]


def test_a_truncated_database_beside_its_key_file_is_refused_and_kept(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    make_passphrase_store(PASSPHRASE)
    env = no_dbus_env(tmp_path, [text("first")], KETCH_PASSPHRASE=PASSPHRASE)
    first = run_ketch("-p", "hello", "--provider", "scripted", cwd=ws, env=env)
    assert first.returncode == 0, first.stderr
    key_file = db_path().with_name("sessions.key")
    key_bytes = key_file.read_bytes()
    for suffix in ("-wal", "-shm"):
        db_path().with_name("sessions.db" + suffix).unlink(missing_ok=True)
    db_path().write_bytes(b"")  # truncated to 0 bytes

    for args in (("sessions", "list"), ("sessions", "verify"), ("sessions", "verify", "--all")):
        run = run_ketch(*args, cwd=ws, env=env)
        assert run.returncode == 1, (args, run.stdout, run.stderr)
        assert "no saved sessions" not in run.stdout and "Traceback" not in run.stderr
        assert "is empty" in run.stderr and "sessions.key" in run.stderr, run.stderr
    again = run_ketch(
        "-p", "again", "--provider", "scripted", cwd=ws,
        env=no_dbus_env(tmp_path, [text("second")], KETCH_PASSPHRASE=PASSPHRASE),
    )  # fmt: skip
    assert again.returncode == 1 and "is empty" in again.stderr, again.stderr
    assert db_path().stat().st_size == 0  # no fresh store was built over the key
    assert key_file.read_bytes() == key_bytes


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 768 KiB tmpfs (root only: CI runs as root; elsewhere the test skips)."""
    mount = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=768k,mode=0700", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(directory: Path) -> None:
    """Fill the filesystem to the last byte (real ENOSPC from here on)."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                continue
    finally:
        os.close(fd)


@pytest.mark.parametrize("slack", [0, 160 * 1024], ids=["full-at-open", "full-mid-turn"])
def test_a_full_disk_is_named_as_a_full_disk(tmp_path: Path, small_disk: Path, slack: int) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    state = small_disk / "state"
    env = cli_env(tmp_path, [text("first answer")], KETCH_STATE_DIR=str(state))
    first = run_ketch("-p", "hello", "--provider", "scripted", cwd=ws, env=env)
    assert first.returncode == 0, first.stderr
    (small_disk / "slack").write_bytes(b"\0" * slack)
    _fill(small_disk)
    (small_disk / "slack").unlink()  # what is left: nothing, or room to open but not for the turn

    big = "x" * 100_000  # a turn whose entries cannot fit in what is left
    run = run_ketch(
        "-p", big, "--provider", "scripted", "--continue", cwd=ws,
        env=cli_env(tmp_path, [call("note", {"text": big}), text("done")], KETCH_STATE_DIR=str(state)),
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    assert "full" in run.stderr and "free some space" in run.stderr, run.stderr
    assert "is damaged" not in run.stderr and "move it away" not in run.stderr
    (small_disk / "filler").unlink()
    verify = run_ketch("sessions", "verify", "--all", cwd=ws, env=env)
    assert verify.returncode == 0, verify.stdout + verify.stderr  # the store was never damaged
    assert os.path.getsize(state / "sessions.db") > 0
