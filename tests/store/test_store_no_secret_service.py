"""Issue 26 item 2: a machine without a Secret Service (SSH, containers, WSL).

Headless commands never stop at a prompt and never fail for want of one: on a new
store, ``ketch sessions list`` says there is nothing yet and ``ketch -p`` answers
unsaved, each with one line on how to choose where the key lives -- even with a
terminal at hand (before, ``-p`` stopped there to have a passphrase chosen). The key
file provider keeps the key outside the state directory, owner-only, and refuses a
file others could read.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

import pexpect
import pytest

from ketch.testing import text
from ketch_crypto.key_file import default_path
from ketch_crypto.manager import key_file
from ketch_crypto.storage_setup import remember
from tests.store.conftest import db_path, logged_requests, run_ketch, state_dir
from tests.store.test_store_passphrase import no_dbus_env


def test_sessions_list_on_a_new_store_without_a_terminal(tmp_path: Path) -> None:
    env = no_dbus_env(tmp_path, None)
    listed = run_ketch("sessions", "list", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.strip() == "no saved sessions"
    (line,) = listed.stderr.strip().splitlines()
    assert "run `ketch` on a terminal once to choose" in line and "KETCH_PASSPHRASE" in line
    assert json.loads(run_ketch("sessions", "list", "--json", cwd=tmp_path, env=env).stdout) == []
    assert not db_path().exists()


def test_p_on_a_new_store_never_stops_at_a_prompt_even_on_a_terminal(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = no_dbus_env(tmp_path, [text("answered on a terminal")])
    started = time.monotonic()
    child = pexpect.spawn(
        sys.executable,
        ["-m", "ketch", "-p", "hi", "--provider", "scripted"],
        cwd=str(workspace),
        env=env,
        encoding="utf-8",
        timeout=60,
        use_poll=True,  # fds past 1024 in a long test process
    )
    output = child.read()  # to the end: it never waits for input
    child.close()
    assert child.exitstatus == 0, output
    assert time.monotonic() - started < 60
    assert "answered on a terminal" in output and "passphrase:" not in output.lower()
    notes = [line for line in output.splitlines() if line.startswith("ketch: ")]
    assert len(notes) == 1 and "not being saved" in notes[0] and "choose" in notes[0]
    assert not db_path().exists() and not key_file(db_path()).exists()
    assert not default_path().exists()
    assert len(logged_requests(tmp_path)) == 1


def test_the_key_file_keeps_sessions_encrypted_without_any_prompt(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = Path(os.environ["KETCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    remember(config / "config.toml", "file")
    first = run_ketch(
        "-p",
        "remember keyfile-canary-3",
        "--provider",
        "scripted",
        cwd=workspace,
        env=no_dbus_env(tmp_path, [text("kept")]),
    )
    assert first.returncode == 0 and "not being saved" not in first.stderr, first.stderr
    key = default_path()
    assert key.is_file() and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert state_dir() not in key.parents  # never beside the sessions
    assert b"keyfile-canary-3" not in db_path().read_bytes()  # encrypted
    again = run_ketch(
        "-p",
        "again",
        "--provider",
        "scripted",
        "--continue",
        cwd=workspace,
        env=no_dbus_env(tmp_path, [text("still there")]),
    )
    assert again.returncode == 0, again.stderr
    assert "remember keyfile-canary-3" in json.dumps(logged_requests(tmp_path)[-1]["messages"])
    key.chmod(0o640)  # someone else could have read it: it protects nothing any more
    refused = run_ketch(
        "-p", "x", "--provider", "scripted", cwd=workspace, env=no_dbus_env(tmp_path, [text("no")])
    )
    assert refused.returncode == 1 and "chmod 600" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.stderr


def test_the_choice_is_remembered_without_touching_the_rest_of_the_config(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        'default_provider = "x"\n\n[storage]\nkey_cache_timeout = "1h"\n\n[loop]\nmax_iterations = 5\n'
    )
    remember(path, "passphrase")
    text_now = path.read_text()
    assert 'key = "passphrase"' in text_now and 'key_cache_timeout = "1h"' in text_now
    assert text_now.startswith('default_provider = "x"') and "max_iterations = 5" in text_now
    remember(path, "file")
    import tomllib

    data = tomllib.loads(path.read_text())
    assert data["storage"] == {"key_cache_timeout": "1h", "key": "file"}
    empty = tmp_path / "new" / "config.toml"
    remember(empty, "file")
    assert tomllib.loads(empty.read_text()) == {"storage": {"key": "file"}}


@pytest.mark.skipif(sys.platform != "linux", reason="permissions as on Linux")
def test_a_key_file_of_another_mode_is_not_trusted_as_a_new_key(tmp_path: Path) -> None:
    from ketch.storage import RecoveryLocked
    from ketch_crypto.key_file import KeyFileProvider

    provider = KeyFileProvider(tmp_path / "keys" / "data.key")
    key = provider.load(create=True)
    assert provider.load(create=False) == key
    provider.path.unlink()
    with pytest.raises(RecoveryLocked, match="recovery-locked"):
        provider.load(create=False)  # a store exists: never a new key
