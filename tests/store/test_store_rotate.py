"""``ketch store key rotate``, killed with SIGKILL at 20 points in a real process.

After every kill, every session still opens with one of the two keys (checked on a copy
of the files, so the check itself changes nothing), and the next open finishes what the
kill interrupted; the final ``rotate`` completes, and after it no earlier key decrypts a
single field, while the current key opens everything, the prompt history included.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import keyring
import pytest

from ketch.storage import IntegrityError
from ketch.testing import text
from ketch.testing.keyring_backend import FileKeyring
from ketch_crypto.cipher import AesGcmFieldCipher
from ketch_crypto.keys import PENDING, SERVICE, USERNAME, decode_key
from ketch_interactive.history import EncryptedPromptHistory
from ketch_store.store import SqliteStore
from ketch_store_kit.codec import Fields
from tests.store.conftest import cli_env, db_path, make_passphrase_store, run_ketch, state_dir
from tests.store.rotate_pause import PAUSE, PLUGIN

SESSIONS, ENTRIES = 30, 60  # 1,800 journal entries: the re-encryption takes a visible while


def keyring_file(tmp_path: Path) -> Path:
    return tmp_path / "keyring.json"


def stored_keys(tmp_path: Path) -> dict[str, bytes]:
    try:
        data = json.loads(keyring_file(tmp_path).read_text())
    except (OSError, ValueError):
        return {}
    return {
        name.split("\x00", 1)[1]: decode_key(value)
        for name, value in data.items()
        if name.startswith(SERVICE + "\x00")
    }


def build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SqliteStore:
    """A store with a key in the (file) keyring the CLI subprocesses share."""
    monkeypatch.setenv("KETCH_TEST_KEYRING_FILE", str(keyring_file(tmp_path)))
    keyring.set_keyring(FileKeyring())
    import ketch_crypto
    from ketch.settings import Settings

    cipher = ketch_crypto.ketch_field_cipher(settings=Settings())
    store = SqliteStore.open(db_path(), cipher)
    body = "a line of the transcript that is long enough to look real " * 4
    for s in range(SESSIONS):
        sid = f"ses_{s:04d}"
        store.ensure_session(
            sid,
            workspace=f"/home/me/project{s % 3}",
            provider="p",
            model="m",
            mode="build",
            created=1.0,
        )
        for n in range(ENTRIES):
            message = {
                "id": f"msg_{s}_{n}",
                "role": ("user", "assistant")[n % 2],
                "parts": [{"type": "text", "text": f"{n} {body}"}],
            }
            store.append(
                sid,
                "message",
                message,
                event_id=store.event_id(sid, str(n)),
                ts=2.0 + n,
                messages=1,
            )
        store.set_title(sid, f"title {s}")
        store.rename_session(sid, f"name {s}")
        store.release(sid)
    store.add_approval("/home/me/project0", "shell(git status)")
    history = EncryptedPromptHistory(state_dir() / "prompt-history", cipher)
    for line in ("first thing I typed", "second thing I typed"):
        history.store_string(line)
    return store


def opens_with(key: bytes, where: Path) -> bool:
    """Whether every field and chain of the store opens under ``key``, on a copy of the files."""
    copy = where / "copy"
    shutil.rmtree(copy, ignore_errors=True)
    copy.mkdir()
    for path in state_dir().glob("sessions.db*"):
        if path.is_file():
            shutil.copy2(path, copy / path.name)
    try:
        store = SqliteStore.open(copy / "sessions.db", AesGcmFieldCipher.from_key(key))
    except (IntegrityError, Exception):  # noqa: BLE001 - "does not open" in any form
        return False
    try:
        ids = store.session_ids()
        return (
            len(ids) == SESSIONS
            and all(store.verify_session(sid).ok for sid in ids)
            and not store.verify_store()
        )
    finally:
        store.close()


def decrypts_anything(key: bytes) -> list[str]:
    """Every sealed value in the live database that ``key`` opens (expect none for a retired key)."""
    fields = Fields(AesGcmFieldCipher.from_key(key))
    opened: list[str] = []
    with contextlib.closing(sqlite3.connect(db_path())) as raw:
        for name, value in raw.execute(
            "SELECT key, value FROM meta WHERE key IN ('keycheck', 'index_key')"
        ):
            opened += [f"meta {name}"] if fields.opens("meta", name, "store", value) else []
        for sid, ws, name, title in raw.execute("SELECT id, workspace, name, title FROM sessions"):
            for column, value in (("workspace", ws), ("name", name), ("title", title)):
                if value is not None and fields.opens("sessions", column, sid, value):
                    opened.append(f"{sid} {column}")
        for sid, seq, event_id, kind, payload in raw.execute(
            "SELECT session_id, seq, event_id, kind, payload FROM journal"
        ):
            if fields.opens("journal", "payload", f"{sid}/{seq}/{kind}/{event_id}", payload):
                opened.append(f"{sid} entry {seq}")
        for index, scope_index, scope in raw.execute(
            "SELECT workspace_index, scope_index, scope FROM approvals"
        ):
            if fields.opens("approvals", "scope", f"{index}/{scope_index}", scope):
                opened.append("approval")
    return opened


def rotate_process(tmp_path: Path, pause: str | None) -> subprocess.Popen[str]:
    env = cli_env(tmp_path)
    if pause:
        env[PAUSE] = pause
        env["KETCH_LOAD"] = f"{env['KETCH_LOAD']},{PLUGIN}"
    return subprocess.Popen(
        [sys.executable, "-m", "ketch", "store", "key", "rotate"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def kill_at(tmp_path: Path, pause: str | None, after: float | None) -> str:
    """Run a rotation and SIGKILL it: stopped at ``pause``, or ``after`` seconds in."""
    proc = rotate_process(tmp_path, pause)
    if pause:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the process stops itself at the phase (SIGSTOP)
            state = Path(f"/proc/{proc.pid}/stat").read_text().split(")")[-1].split()[0]
            if state == "T" or proc.poll() is not None:
                break
            time.sleep(0.01)
        assert proc.poll() is None, f"finished before {pause}: {proc.communicate()}"
    else:
        time.sleep(after or 0)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    return proc.stderr.read() if proc.stderr else ""


def test_rotation_survives_sigkill_at_20_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = build(tmp_path, monkeypatch)
    store.close()
    total = SESSIONS * ENTRIES
    phases = [
        "locked",
        "marked",
        "staged",
        "journal:1",
        f"journal:{total // 2}",
        f"journal:{total}",
        "sessions-done",
        "committed",
        "history",
        "promoted",
    ]
    began = time.monotonic()
    timing = rotate_process(tmp_path, None)
    assert timing.wait(timeout=120) == 0, timing.communicate()
    full = time.monotonic() - began
    points: list[tuple[str | None, float | None]] = [(phase, None) for phase in phases]
    points += [(None, full * (i + 1) / 11) for i in range(10)]
    assert len(points) == 20
    seen: list[bytes] = []
    for pause, after in points:
        before = stored_keys(tmp_path)[USERNAME]
        seen.append(before)
        kill_at(tmp_path, pause, after)
        keys = stored_keys(tmp_path)
        candidates = {before, keys.get(USERNAME, before), keys.get(PENDING, before)}
        opened = [key == before for key in candidates if opens_with(key, tmp_path)]
        assert opened, (pause, after)
        # The next open finishes (or drops) what the kill left; everything verifies.
        verify = run_ketch("sessions", "verify", "--all", cwd=tmp_path, env=cli_env(tmp_path))
        assert verify.returncode == 0, (pause, after, verify.stdout[-500:], verify.stderr[-500:])
        assert PENDING not in stored_keys(tmp_path), (pause, after)
        with contextlib.closing(sqlite3.connect(db_path())) as raw:
            assert raw.execute("SELECT value FROM meta WHERE key = 'rotating'").fetchone() is None
    done = run_ketch("store", "key", "rotate", cwd=tmp_path, env=cli_env(tmp_path))
    assert done.returncode == 0 and "the old key is retired" in done.stdout, done.stderr
    current = stored_keys(tmp_path)[USERNAME]
    assert stored_keys(tmp_path).keys() == {USERNAME}
    assert current not in seen
    for old in set(seen):
        assert decrypts_anything(old) == []
    assert (
        len(decrypts_anything(current)) == 2 + SESSIONS * (3 + ENTRIES) + 1
    )  # every field opens under the new key
    history = EncryptedPromptHistory(
        state_dir() / "prompt-history", AesGcmFieldCipher.from_key(current)
    )
    assert list(history.load_history_strings()) == ["second thing I typed", "first thing I typed"]
    listing = run_ketch("sessions", "list", "--all", cwd=tmp_path, env=cli_env(tmp_path))
    assert (
        listing.returncode == 0 and listing.stdout.count("ses_") == SESSIONS
    )  # indexes stayed valid


def test_rotate_refuses_while_another_ketch_has_the_store_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = build(tmp_path, monkeypatch)  # this process keeps it open
    before = stored_keys(tmp_path)
    refused = run_ketch("store", "key", "rotate", cwd=tmp_path, env=cli_env(tmp_path))
    assert (
        refused.returncode == 1
        and "other ketch processes have the session store open" in refused.stderr
    )
    assert stored_keys(tmp_path) == before
    store.close()
    assert run_ketch("store", "key", "rotate", cwd=tmp_path, env=cli_env(tmp_path)).returncode == 0


def test_a_passphrase_store_rotates_without_asking_again(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    old = make_passphrase_store("a long enough passphrase")
    env = {
        k: v for k, v in cli_env(tmp_path, [text("saved")]).items() if k != "PYTHON_KEYRING_BACKEND"
    }
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    env["KETCH_PASSPHRASE"] = "a long enough passphrase"
    assert run_ketch("-p", "one", "--provider", "scripted", cwd=workspace, env=env).returncode == 0
    key_file = state_dir() / "sessions.key"
    salt_before = json.loads(key_file.read_text())["kdf"]["salt"]
    rotated = run_ketch("store", "key", "rotate", cwd=workspace, env=env)
    assert rotated.returncode == 0, rotated.stderr
    assert (
        json.loads(key_file.read_text())["kdf"]["salt"] == salt_before
    )  # same passphrase, same KEK
    assert decrypts_anything(old) == []
    again = run_ketch(
        "-p",
        "two",
        "--provider",
        "scripted",
        "--continue",
        cwd=workspace,
        env={**env, "KETCH_SCRIPT": env["KETCH_SCRIPT"]},
    )
    assert again.returncode == 0, again.stderr
    assert not (state_dir() / "sessions.key.next").exists()
