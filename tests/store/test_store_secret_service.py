"""The data key in a real Secret Service (gnome-keyring under dbus-run-session, as .ci/run sets up)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ketch.settings import Settings
from ketch.storage import RecoveryLocked
from ketch.testing import text
from ketch_crypto import ketch_field_cipher
from ketch_crypto.keys import SERVICE, USERNAME
from ketch_store.store import SqliteStore
from tests.store.conftest import cli_env, run_ketch

pytestmark = [
    pytest.mark.keyring,
    pytest.mark.skipif(
        os.environ.get("KETCH_TEST_SECRET_SERVICE") != "1",
        reason="needs a real Secret Service (KETCH_TEST_SECRET_SERVICE=1)",
    ),
]


@pytest.fixture
def secret_service() -> Iterator[object]:
    """The real backend, with whatever key it held put back afterwards."""
    import keyring
    from keyring.backends import SecretService

    backend = SecretService.Keyring()
    keyring.set_keyring(backend)
    previous = backend.get_password(SERVICE, USERNAME)
    if previous is not None:
        backend.delete_password(SERVICE, USERNAME)
    yield backend
    if backend.get_password(SERVICE, USERNAME) is not None:
        backend.delete_password(SERVICE, USERNAME)
    if previous is not None:
        backend.set_password(SERVICE, USERNAME, previous)


def _open() -> SqliteStore:
    path = Path(os.environ["KETCH_STATE_DIR"]) / "sessions.db"
    return SqliteStore.open(path, ketch_field_cipher(settings=Settings()))


def test_key_lives_in_the_secret_service(secret_service: object) -> None:
    store = _open()
    assert secret_service.get_password(SERVICE, USERNAME) is not None  # type: ignore[attr-defined]
    store.ensure_session(
        "ses_ss", workspace="/w", provider="p", model="m", mode="build", created=1.0
    )
    store.append(
        "ses_ss",
        "message",
        {"id": "msg_1", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
        event_id="ev_1",
        ts=1.0,
        messages=1,
    )
    store.close()
    again = _open()
    assert again.load_session("ses_ss").transcript[0].text == "hi"
    again.close()
    db = again.path
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    secret_service.delete_password(SERVICE, USERNAME)  # type: ignore[attr-defined]
    with pytest.raises(RecoveryLocked, match="missing"):
        _open()
    assert secret_service.get_password(SERVICE, USERNAME) is None  # type: ignore[attr-defined]
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_cli_uses_the_secret_service_by_default(tmp_path: Path, secret_service: object) -> None:
    env = cli_env(tmp_path, [text("stored in a real keyring")])
    del env["PYTHON_KEYRING_BACKEND"]  # keyring's own detection: the Secret Service on D-Bus
    workspace = tmp_path / "ws"
    workspace.mkdir()
    run = run_ketch("-p", "hello", "--provider", "scripted", cwd=workspace, env=env)
    assert run.returncode == 0, run.stderr
    assert "not being saved" not in run.stderr
    assert secret_service.get_password(SERVICE, USERNAME) is not None  # type: ignore[attr-defined]
    listing = run_ketch("sessions", "list", cwd=workspace, env=env)
    assert listing.returncode == 0 and "hello" in listing.stdout


def _real_env(tmp_path: Path, script: list[dict[str, object]] | None = None) -> dict[str, str]:
    env = cli_env(tmp_path, script)
    del env["PYTHON_KEYRING_BACKEND"]  # keyring's own detection: the Secret Service on D-Bus
    return env


def test_rotation_retires_the_old_key_in_the_secret_service(
    tmp_path: Path, secret_service: object
) -> None:
    from ketch_crypto.keys import PENDING, decode_key

    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert (
        run_ketch(
            "-p",
            "hello",
            "--provider",
            "scripted",
            cwd=workspace,
            env=_real_env(tmp_path, [text("one")]),
        ).returncode
        == 0
    )
    old = decode_key(secret_service.get_password(SERVICE, USERNAME))  # type: ignore[attr-defined]
    rotated = run_ketch("store", "key", "rotate", cwd=workspace, env=_real_env(tmp_path))
    assert rotated.returncode == 0, rotated.stderr
    new = decode_key(secret_service.get_password(SERVICE, USERNAME))  # type: ignore[attr-defined]
    assert new != old and secret_service.get_password(SERVICE, PENDING) is None  # type: ignore[attr-defined]
    again = run_ketch(
        "-p",
        "again",
        "--provider",
        "scripted",
        "--continue",
        cwd=workspace,
        env=_real_env(tmp_path, [text("two")]),
    )
    assert again.returncode == 0, again.stderr
    verify = run_ketch("sessions", "verify", "--all", cwd=workspace, env=_real_env(tmp_path))
    assert verify.returncode == 0, verify.stdout


def test_the_key_moves_from_the_secret_service_to_a_passphrase_and_back(
    tmp_path: Path, secret_service: object
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert (
        run_ketch(
            "-p",
            "hello",
            "--provider",
            "scripted",
            cwd=workspace,
            env=_real_env(tmp_path, [text("one")]),
        ).returncode
        == 0
    )
    env = {**_real_env(tmp_path), "KETCH_NEW_PASSPHRASE": "a passphrase for the move"}
    moved = run_ketch("store", "key", "passphrase", "--to", "passphrase", cwd=workspace, env=env)
    assert moved.returncode == 0, moved.stderr
    assert secret_service.get_password(SERVICE, USERNAME) is None  # type: ignore[attr-defined]
    env = {**_real_env(tmp_path), "KETCH_PASSPHRASE": "a passphrase for the move"}
    back = run_ketch("store", "key", "passphrase", "--to", "keyring", cwd=workspace, env=env)
    assert back.returncode == 0, back.stderr
    assert secret_service.get_password(SERVICE, USERNAME) is not None  # type: ignore[attr-defined]
    listing = run_ketch("sessions", "list", cwd=workspace, env=_real_env(tmp_path))
    assert listing.returncode == 0 and "hello" in listing.stdout
