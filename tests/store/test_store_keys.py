"""``ketch store key status|export|import|passphrase`` through the CLI (rotate has its own file)."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest

from ketch.testing import text
from ketch_crypto import recovery
from ketch_crypto.keys import SERVICE, USERNAME, decode_key
from tests.store.conftest import cli_env, db_path, run_ketch, state_dir

PASSPHRASE = "the first long passphrase"
NEW = "the second long passphrase"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    first = run_ketch(
        "-p", "keep me", "--provider", "scripted", cwd=ws, env=cli_env(tmp_path, [text("kept")])
    )
    assert first.returncode == 0, first.stderr
    return ws


def keyring_key(tmp_path: Path) -> bytes | None:
    data = json.loads((tmp_path / "keyring.json").read_text())
    value = data.get(f"{SERVICE}\x00{USERNAME}")
    return decode_key(value) if value else None


def ketch(tmp_path: Path, workspace: Path, *args: str, **env: str) -> tuple[int, str, str]:
    run = run_ketch(*args, cwd=workspace, env={**cli_env(tmp_path), **env})
    assert "Traceback" not in run.stderr, run.stderr
    return run.returncode, run.stdout, run.stderr


def test_status_says_where_the_key_is_and_never_shows_it(tmp_path: Path, workspace: Path) -> None:
    code, out, err = ketch(tmp_path, workspace, "store", "key", "status")
    assert code == 0, err
    assert re.search(r'^provider\s+keyring \(storage.key = "auto"\)$', out, re.M), out
    assert 'service "ketch", user "data-key"' in out
    assert re.search(r"^made\s+\d{4}-\d\d-\d\d \d\d:\d\d$", out, re.M) and re.search(
        r"^rotated\s+never$", out, re.M
    ), out
    key = keyring_key(tmp_path)
    assert key is not None and key.hex() not in out and recovery.encode(key) not in out


def test_export_needs_a_confirmation_and_the_code_restores_a_lost_key(
    tmp_path: Path, workspace: Path
) -> None:
    code, out, err = ketch(tmp_path, workspace, "store", "key", "export")
    assert code == 2 and out == "" and "needs a confirmation" in err
    code, out, err = ketch(
        tmp_path, workspace, "store", "key", "export", "--yes", "-o", str(tmp_path / "recovery.txt")
    )
    assert code == 0 and out == "" and "decrypts every session" in err
    saved = tmp_path / "recovery.txt"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert recovery.decode(saved.read_text()) == keyring_key(tmp_path)
    (tmp_path / "keyring.json").write_text("{}")  # the key is lost: recovery-locked
    assert ketch(tmp_path, workspace, "sessions", "list")[0] == 1
    code, out, err = ketch(tmp_path, workspace, "store", "key", "import", str(saved))
    assert code == 0 and "imported the key" in out, err
    code, out, _ = ketch(tmp_path, workspace, "sessions", "list")
    assert code == 0 and "keep me" in out
    # The same code again: nothing to do; a code for another key: refused, nothing changed.
    assert "nothing to do" in ketch(tmp_path, workspace, "store", "key", "import", str(saved))[1]
    other = tmp_path / "other.txt"
    other.write_text(recovery.encode(os.urandom(32)))
    before = keyring_key(tmp_path)
    code, _, err = ketch(tmp_path, workspace, "store", "key", "import", str(other))
    assert code == 1 and "another key" in err and keyring_key(tmp_path) == before
    (tmp_path / "keyring.json").write_text("{}")
    code, _, err = ketch(tmp_path, workspace, "store", "key", "import", str(other))
    assert code == 1 and "does not open" in err and keyring_key(tmp_path) is None
    mistyped = (
        saved.read_text().replace("A", "B", 1)
        if "A" in saved.read_text()[7:]
        else saved.read_text().replace("2", "3", 1)
    )
    (tmp_path / "typo.txt").write_text(mistyped)
    code, _, err = ketch(tmp_path, workspace, "store", "key", "import", str(tmp_path / "typo.txt"))
    assert code == 2 and "does not check out" in err


def test_passphrase_moves_changes_and_moves_back(tmp_path: Path, workspace: Path) -> None:
    config = Path(os.environ["KETCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(
        "[storage]\nkey_cache_timeout = 0\n"
    )  # every run must show its passphrase
    key = keyring_key(tmp_path)
    code, out, err = ketch(
        tmp_path,
        workspace,
        "store",
        "key",
        "passphrase",
        "--to",
        "passphrase",
        KETCH_NEW_PASSPHRASE=PASSPHRASE,
    )
    assert code == 0 and "moved the session key to the passphrase provider" in out, err
    wrapped = state_dir() / "sessions.key"
    assert wrapped.exists() and keyring_key(tmp_path) is None
    assert ketch(tmp_path, workspace, "sessions", "list")[0] == 1  # now it needs the passphrase
    code, out, _ = ketch(tmp_path, workspace, "sessions", "list", KETCH_PASSPHRASE=PASSPHRASE)
    assert code == 0 and "keep me" in out
    status = ketch(tmp_path, workspace, "store", "key", "status")[1]
    assert (
        "passphrase" in status
        and str(wrapped) in status
        and ("Argon2id" in status or "scrypt" in status)
    )

    code, out, err = ketch(
        tmp_path,
        workspace,
        "store",
        "key",
        "passphrase",
        KETCH_PASSPHRASE=PASSPHRASE,
        KETCH_NEW_PASSPHRASE=NEW,
    )
    assert code == 0 and "changed the passphrase" in out, err
    code, _, err = ketch(tmp_path, workspace, "sessions", "list", KETCH_PASSPHRASE=PASSPHRASE)
    assert code == 1 and "wrong passphrase" in err
    assert ketch(tmp_path, workspace, "sessions", "list", KETCH_PASSPHRASE=NEW)[0] == 0

    code, out, err = ketch(
        tmp_path, workspace, "store", "key", "passphrase", "--to", "keyring", KETCH_PASSPHRASE=NEW
    )
    assert code == 0 and "moved the session key to the keyring provider" in out, err
    assert not wrapped.exists() and keyring_key(tmp_path) == key  # the same data key all along
    assert ketch(tmp_path, workspace, "sessions", "list")[0] == 0


def test_a_forgotten_passphrase_is_recovered_with_the_code(tmp_path: Path, workspace: Path) -> None:
    ketch(
        tmp_path,
        workspace,
        "store",
        "key",
        "passphrase",
        "--to",
        "passphrase",
        KETCH_NEW_PASSPHRASE=PASSPHRASE,
    )
    code, out, _ = ketch(
        tmp_path, workspace, "store", "key", "export", "--yes", KETCH_PASSPHRASE=PASSPHRASE
    )
    assert code == 0
    saved = tmp_path / "code.txt"
    saved.write_text(out)
    # The passphrase is forgotten; the code comes back with a new one.
    code, out, err = ketch(
        tmp_path,
        workspace,
        "store",
        "key",
        "import",
        str(saved),
        KETCH_PASSPHRASE="nobody remembers this",
        KETCH_NEW_PASSPHRASE=NEW,
    )
    assert code == 0 and "passphrase provider" in out, err
    code, out, _ = ketch(tmp_path, workspace, "sessions", "list", KETCH_PASSPHRASE=NEW)
    assert code == 0 and "keep me" in out
    assert db_path().exists()


def test_key_commands_without_a_store_or_with_encryption_off(tmp_path: Path) -> None:
    ws = tmp_path / "empty"
    ws.mkdir()
    code, _, err = ketch(tmp_path, ws, "store", "key", "rotate")
    assert code == 1 and "no session store yet" in err
    config = Path(os.environ["KETCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text('[storage]\nencryption = "off"\n')
    code, _, err = ketch(tmp_path, ws, "store", "key", "status")
    assert code == 2 and "no key to manage" in err
    (config / "config.toml").write_text('[storage]\nkey = "vault"\n')
    code, _, err = ketch(tmp_path, ws, "store", "key", "status")
    assert code == 2 and "is not one of auto, keyring, passphrase" in err
