"""Sessions encrypted where there is no Secret Service: the key wrapped under a passphrase.

End to end through the CLI with no D-Bus at all (the keyring library finds no backend),
the passphrase in ``KETCH_PASSPHRASE``; the kernel session keyring caches the derived
key between runs, and nothing ketch starts can read that key or the passphrase.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ketch.storage import StoreUnavailable
from ketch.testing import call, text
from ketch_crypto import kernel_keyring, manager, wrapped
from ketch_crypto.manager import KeyManager, cache_name, key_file
from ketch_crypto.settings import KeySettings
from ketch_crypto.wrapped import WrongPassphrase
from tests.store.conftest import (
    ROOT,
    cli_env,
    db_path,
    logged_requests,
    make_passphrase_store,
    run_ketch,
    state_dir,
)

CANARY = "KETCHPASSCANARY41c2"
PASSPHRASE = "correct horse battery staple"


def no_dbus_env(
    tmp_path: Path, script: list[dict[str, object]] | None, **extra: str
) -> dict[str, str]:
    """No session bus, no keyring backend forced: keyring's own detection finds nothing."""
    env = cli_env(tmp_path, script, **extra)
    for name in (
        "PYTHON_KEYRING_BACKEND",
        "KETCH_TEST_KEYRING_FILE",
        "DBUS_SESSION_BUS_ADDRESS",
        "KETCH_PASSPHRASE",
    ):
        env.pop(name, None)
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env["XDG_RUNTIME_DIR"] = str(runtime)  # no bus socket there either
    env.update(extra)
    return env


def store_files() -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(state_dir().glob("sessions.*"))
        if p.is_file() and p.stat().st_size
    }


def leaks(roots: list[Path], needles: list[str]) -> list[str]:
    found, scanned = [], 0
    for root in roots:
        for path in root.rglob("*") if root.exists() else []:
            if path.is_file():
                scanned += 1
                data = path.read_bytes()
                found += [
                    f"{path}: {n}"
                    for n in needles
                    if n.encode() in data or n.encode("utf-16-le") in data
                ]
    assert scanned, roots
    return found


def test_no_dbus_at_all_saves_encrypted_and_continues(tmp_path: Path) -> None:
    workspace = tmp_path / f"project-{CANARY}-path"
    workspace.mkdir()
    probe = subprocess.run(
        [sys.executable, "-c", "import keyring; print(type(keyring.get_keyring()).__module__)"],
        env=no_dbus_env(tmp_path, None),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.stdout.strip() in ("keyring.backends.fail", "keyring.backends.chainer"), (
        probe.stdout + probe.stderr
    )

    env = no_dbus_env(
        tmp_path, [text(f"the answer is {CANARY}-answer")], KETCH_PASSPHRASE=PASSPHRASE
    )
    first = run_ketch(
        "-p",
        f"remember {CANARY}-prompt",
        "--provider",
        "scripted",
        "--output-format",
        "json",
        cwd=workspace,
        env=env,
    )
    assert first.returncode == 0, first.stderr
    assert "not being saved" not in first.stderr and "Traceback" not in first.stderr
    session_id = json.loads(first.stdout)["session_id"]
    assert key_file(db_path()).exists() and db_path().exists()
    record = json.loads(key_file(db_path()).read_text())
    assert (
        record["kdf"]["name"] in ("argon2id", "scrypt") and "salt" in record["kdf"]
    )  # parameters recorded
    roots = [
        state_dir(),
        Path(os.environ["KETCH_CACHE_DIR"]),
        Path(os.environ["XDG_DATA_HOME"]),
        Path(os.environ["XDG_STATE_HOME"]),
        Path(os.environ["XDG_CACHE_HOME"]),
    ]
    assert (
        leaks(roots, [f"{CANARY}-prompt", f"{CANARY}-answer", f"{CANARY}-path", PASSPHRASE]) == []
    )

    # A new process (no cached key: a fresh session keyring) brings the history back.
    kernel_keyring.join_new_session()
    env = no_dbus_env(tmp_path, [text("yes, I remember")], KETCH_PASSPHRASE=PASSPHRASE)
    again = run_ketch(
        "-p",
        "what did I ask?",
        "--provider",
        "scripted",
        "--continue",
        "--output-format",
        "json",
        cwd=workspace,
        env=env,
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["session_id"] == session_id
    sent = logged_requests(tmp_path)[-1]["messages"]
    assert [p.get("text") for m in sent for p in m["parts"]][:2] == [
        f"remember {CANARY}-prompt",
        f"the answer is {CANARY}-answer",
    ]

    # The wrong passphrase: an error that names itself, exit 1, no request, nothing written.
    kernel_keyring.join_new_session()
    before, requests = store_files(), len(logged_requests(tmp_path))
    env = no_dbus_env(tmp_path, [text("never")], KETCH_PASSPHRASE="not the passphrase")
    wrong = run_ketch("-p", "hello", "--provider", "scripted", "--continue", cwd=workspace, env=env)
    assert wrong.returncode == 1
    assert (
        wrong.stderr.startswith("ketch: wrong passphrase")
        and "integrity" not in wrong.stderr.lower()
    )
    assert len(wrong.stderr.strip().splitlines()) == 1 and "Traceback" not in wrong.stderr
    assert store_files() == before and len(logged_requests(tmp_path)) == requests
    fresh = run_ketch("-p", "a new session", "--provider", "scripted", cwd=workspace, env=env)
    assert fresh.returncode == 1 and "wrong passphrase" in fresh.stderr and store_files() == before


def test_child_processes_never_see_the_passphrase_or_the_cached_key(
    tmp_path: Path,
) -> None:
    """A real shell tool call, sandbox on and off: its environment has no KETCH_PASSPHRASE,
    and it cannot find the key ketch cached in the session keyring, which this process
    (the same login session, not a child of ketch) can."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    # The sandbox shows no project tree outside the workspace: the probe brings its own
    # copy of the keyring reader (stdlib only) instead of importing ketch's.
    (workspace / "kk.py").write_text(Path(kernel_keyring.__file__).read_text())
    (workspace / "probe.py").write_text(
        "import ctypes, json, os\n"
        "import kk\n"
        "name = open('name.txt').read().strip()\n"
        "print(json.dumps({'env': sorted(k for k in os.environ if 'PASS' in k or 'KETCH' in k),\n"
        "  'values': [v for v in os.environ.values() if 'horse' in v],\n"
        "  'read': (kk.read(name) or b'').hex(), 'proc_keys': [l for l in open('/proc/keys') if 'ketch:' in l]}))\n"
    )
    config = Path(os.environ["KETCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    plugins = "guards,policy,shell,sandbox,store,crypto,headless,scripted_plugin,store_tools"
    for sandbox in ("true", "false"):
        (config / "config.toml").write_text(f"[sandbox]\nenabled = {sandbox}\n")
        command = f"{os.path.realpath(sys.executable)} probe.py"
        script = [call("shell", {"command": command}), text("probed")]
        env = no_dbus_env(
            tmp_path,
            script,
            KETCH_PASSPHRASE=PASSPHRASE,
            KETCH_PLUGINS=plugins,
            PYTHONPATH=f"{ROOT}:{ROOT / 'plugins'}:{ROOT / 'kernel'}",
        )
        if not db_path().exists():
            make_passphrase_store(PASSPHRASE)
        salt = wrapped.read(key_file(db_path())).kdf.salt  # type: ignore[union-attr]
        (workspace / "name.txt").write_text(cache_name(salt))
        run = run_ketch(
            "-p",
            "probe",
            "--provider",
            "scripted",
            "--profile",
            "full-access",
            "--output-format",
            "stream-json",
            cwd=workspace,
            env=env,
        )
        assert run.returncode == 0, run.stderr
        results = [
            json.loads(line)
            for line in run.stdout.splitlines()
            if '"tool_result"' in line and line.startswith('{"ts"')
        ]
        results = [r for r in results if r.get("type") == "tool_result"]
        assert results and results[0]["ok"], (sandbox, results, run.stderr[-2000:])
        seen = json.loads(results[0]["output"].split("\n")[0])
        assert seen["env"] == [] or all("PASSPHRASE" not in name for name in seen["env"]), seen
        assert seen["values"] == [] and seen["read"] == "" and seen["proc_keys"] == [], (
            sandbox,
            seen,
        )
        # The cache is really there for the login session (this process is not ketch's child).
        if kernel_keyring.available():
            assert kernel_keyring.read(cache_name(salt)) is not None


def test_the_kernel_keyring_cache_lasts_until_its_timeout(
    tmp_path: Path, session_keyring: str
) -> None:
    config = Path(os.environ["KETCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text('[storage]\nkey = "passphrase"\nkey_cache_timeout = "3s"\n')
    workspace = tmp_path / "ws"
    workspace.mkdir()
    make_passphrase_store(PASSPHRASE)
    first = run_ketch(
        "-p",
        "one",
        "--provider",
        "scripted",
        cwd=workspace,
        env=no_dbus_env(tmp_path, [text("1")], KETCH_PASSPHRASE=PASSPHRASE),
    )
    assert first.returncode == 0, first.stderr
    began = time.monotonic()
    second = run_ketch(
        "-p",
        "two",
        "--provider",
        "scripted",
        "--continue",
        cwd=workspace,
        env=no_dbus_env(tmp_path, [text("2")]),
    )
    assert second.returncode == 0, second.stderr  # no passphrase needed: the cached key
    assert time.monotonic() - began < 3
    time.sleep(max(0.0, 3.5 - (time.monotonic() - began)))
    third = run_ketch(
        "-p",
        "three",
        "--provider",
        "scripted",
        "--continue",
        cwd=workspace,
        env=no_dbus_env(tmp_path, [text("3")]),
    )
    assert (
        third.returncode == 1
        and "none was given" in third.stderr
        and "KETCH_PASSPHRASE" in third.stderr
    )
    fourth = run_ketch(
        "-p",
        "four",
        "--provider",
        "scripted",
        "--continue",
        cwd=workspace,
        env=no_dbus_env(tmp_path, [text("4")], KETCH_PASSPHRASE=PASSPHRASE),
    )
    assert fourth.returncode == 0, fourth.stderr
    users = [
        p["text"]
        for m in logged_requests(tmp_path)[-1]["messages"]
        if m["role"] == "user"
        for p in m["parts"]
    ]
    assert users == ["one", "two", "four"]


def test_no_store_and_no_way_to_make_one_says_so_once(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    plugins = "guards,policy,store,crypto,headless,scripted_plugin,store_tools"
    run = run_ketch(
        "-p",
        "hi",
        "--provider",
        "scripted",
        cwd=workspace,
        env=no_dbus_env(tmp_path, [text("unsaved answer")], KETCH_PLUGINS=plugins),
    )
    assert run.returncode == 0 and run.stdout.strip() == "unsaved answer", run.stderr
    notices = [line for line in run.stderr.splitlines() if line.startswith("ketch: ")]
    assert len(notices) == 1, notices
    assert (
        "not being saved" in notices[0]
        and "KETCH_PASSPHRASE" in notices[0]
        and "no OS keyring" in notices[0]
    )
    assert not db_path().exists() and not key_file(db_path()).exists()  # nothing was written


def test_a_short_passphrase_is_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    run = run_ketch(
        "-p",
        "hi",
        "--provider",
        "scripted",
        cwd=workspace,
        env=no_dbus_env(tmp_path, [text("x")], KETCH_PASSPHRASE="short"),
    )
    assert run.returncode == 0 and "too short" in run.stderr and not db_path().exists()


# --- the wrapped-key file ------------------------------------------------------------------


def test_the_wrapped_key_file_holds_nothing_usable_and_binds_its_parameters(tmp_path: Path) -> None:
    key = make_passphrase_store(PASSPHRASE)
    path = key_file(db_path())
    raw = path.read_bytes()
    assert key not in raw and key.hex().encode() not in raw and PASSPHRASE.encode() not in raw
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    current = wrapped.read(path)
    assert current is not None
    assert current.unwrap(current.kdf.derive(PASSPHRASE), path) == key
    with pytest.raises(WrongPassphrase, match="wrong passphrase"):
        current.unwrap(current.kdf.derive("another passphrase"), path)
    # Parameters are associated data: changing them (even to stronger ones) fails the unwrap.
    data = json.loads(raw)
    data["kdf"]["iterations"] = 2
    path.write_text(json.dumps(data))
    changed = wrapped.read(path)
    assert changed is not None
    with pytest.raises(WrongPassphrase):
        changed.unwrap(changed.kdf.derive(PASSPHRASE), path)
    # A file asking for a KDF too weak (or too costly) to be real is refused before any work.
    data["kdf"]["memory_kib"] = 64
    path.write_text(json.dumps(data))
    with pytest.raises(StoreUnavailable, match="outside"):
        wrapped.read(path)
    path.write_text("not json")
    with pytest.raises(StoreUnavailable, match="not a ketch wrapped-key file"):
        wrapped.read(path)


def test_default_kdf_is_strong() -> None:
    kdf = wrapped.default_kdf()
    if kdf.name == "argon2id":
        assert kdf.params == {"memory_kib": 65536, "iterations": 3, "lanes": 4}
    else:
        assert kdf.params["n"] >= 2**17
    assert len(kdf.salt) == 16 and wrapped.default_kdf().salt != kdf.salt


def test_explicit_setting_mismatch_is_explained(tmp_path: Path) -> None:
    make_passphrase_store(PASSPHRASE)
    keys = KeyManager(KeySettings(provider="keyring"), db_path(), detach=False)
    with pytest.raises(StoreUnavailable, match='storage.key = "keyring"'):
        keys.load(False)


def test_two_kernels_one_failing_to_unlock_does_not_lock_out_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One process (``ketch acp`` runs a kernel per session), one passphrase store, no
    terminal: the first kernel finds no passphrase and no cached key and cannot open it;
    once the person has unlocked it in a terminal (the kernel keyring caches the key),
    the next kernel opens it -- the first one's failure is not the process's. A wrong
    ``KETCH_PASSPHRASE`` (the process's own) fails every kernel, deriving only once."""
    if not kernel_keyring.available() or not kernel_keyring.join_new_session():
        pytest.skip("no kernel keyring here")
    monkeypatch.delenv("KETCH_PASSPHRASE", raising=False)
    monkeypatch.setattr(sys, "stdin", io.StringIO())  # no terminal to ask on
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    database = tmp_path / "sessions.db"
    key = os.urandom(32)
    manager.forget()
    KeyManager(KeySettings("passphrase", 0), database, detach=False).passphrase.write_new(
        key, PASSPHRASE
    )
    manager.forget()  # nothing unlocked in this process yet
    first = KeyManager(KeySettings("passphrase", 3600), database, detach=False)
    with pytest.raises(StoreUnavailable, match="none was given"):
        first.load(False)
    sealed = wrapped.read(key_file(database))
    assert sealed is not None
    kek = sealed.kdf.derive(PASSPHRASE)
    assert kernel_keyring.store(cache_name(sealed.kdf.salt), kek, 60)
    try:
        second = KeyManager(KeySettings("passphrase", 3600), database, detach=False)
        assert second.load(False) == key

        manager.forget()
        kernel_keyring.revoke(cache_name(sealed.kdf.salt))
        monkeypatch.setenv("KETCH_PASSPHRASE", "not the passphrase")
        derived = []
        real_derive = type(sealed.kdf).derive
        monkeypatch.setattr(
            type(sealed.kdf), "derive", lambda kdf, p: derived.append(p) or real_derive(kdf, p)
        )
        for _ in range(2):
            with pytest.raises(WrongPassphrase):
                KeyManager(KeySettings("passphrase", 0), database, detach=False).load(False)
        assert len(derived) == 1
    finally:
        kernel_keyring.revoke(cache_name(sealed.kdf.salt))
        manager.forget()


def test_a_missing_wrapped_key_file_is_recovery_locked(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    make_passphrase_store(PASSPHRASE)
    env = no_dbus_env(tmp_path, [text("saved")], KETCH_PASSPHRASE=PASSPHRASE)
    assert run_ketch("-p", "one", "--provider", "scripted", cwd=workspace, env=env).returncode == 0
    key_file(db_path()).unlink()
    manager.forget()
    before = store_files()
    run = run_ketch(
        "-p",
        "two",
        "--provider",
        "scripted",
        cwd=workspace,
        env=no_dbus_env(tmp_path, [text("x")], KETCH_PASSPHRASE=PASSPHRASE),
    )
    assert (
        run.returncode == 1
        and run.stderr.startswith("ketch: recovery-locked")
        and "sessions.key is missing" in run.stderr
    )
    assert (
        store_files() == before and not key_file(db_path()).exists()
    )  # never a new key over old data
