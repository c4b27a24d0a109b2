"""Fixtures for the store tests: a throwaway keyring, store helpers, a CLI runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ketch.testing.keyring_backend import MemoryKeyring, throwaway_keyring

ROOT = Path(__file__).resolve().parents[2]
TOOLS = "store_tools=tests.store.store_test_tools"
STORE_PLUGINS = ["guards", "store", "crypto"]


@pytest.fixture(autouse=True)
def memory_keyring() -> Iterator[MemoryKeyring]:
    """Every store test gets an empty in-memory keyring; the previous backend comes back after."""
    from ketch_crypto.manager import forget

    forget()  # no passphrase or derived key from another test
    with throwaway_keyring() as backend:
        yield backend
    forget()


@pytest.fixture(autouse=True)
def _own_session_keyring() -> None:
    """Each test starts in an empty session keyring of its own (when there is a kernel
    keyring), so a key cached by one test is never found by another."""
    import uuid

    from ketch_crypto import kernel_keyring

    kernel_keyring.join_new_session(f"ketch-test-{uuid.uuid4().hex[:12]}")


@pytest.fixture
def session_keyring() -> str:
    """A fresh, empty kernel session keyring for this test process and the ketch processes
    it starts (they inherit it), as a new login session would have."""
    import uuid

    from ketch_crypto import kernel_keyring

    name = f"ketch-test-{uuid.uuid4().hex[:12]}"
    if not kernel_keyring.join_new_session(name):
        pytest.skip("no kernel keyring here (not Linux, or keyctl is blocked by seccomp)")
    return name


def fast_kdf() -> Any:
    """The cheapest Argon2id a wrapped-key file may record (8 MiB, one pass): for tests
    that start many processes; the defaults are measured in benchmarks/store.py."""
    from ketch_crypto import wrapped

    return wrapped.Kdf(
        "argon2id", {"memory_kib": 8192, "iterations": 1, "lanes": 1}, os.urandom(16)
    )


def make_passphrase_store(passphrase: str) -> bytes:
    """A wrapped-key file under ``passphrase`` (cheap KDF) beside the test's database; the key."""
    from ketch_crypto.manager import PassphraseProvider, key_file

    key = os.urandom(32)
    PassphraseProvider(key_file(db_path()), 0, detach=False).write_new(key, passphrase, fast_kdf())
    return key


def state_dir() -> Path:
    return Path(os.environ["KETCH_STATE_DIR"])


def db_path() -> Path:
    return state_dir() / "sessions.db"


def cli_env(
    tmp_path: Path, script: list[dict[str, Any]] | None = None, **extra: str
) -> dict[str, str]:
    """Environment for a ``ketch`` subprocess: file keyring, scripted provider, test tools."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PYTHON_KEYRING_BACKEND": "ketch.testing.keyring_backend.FileKeyring",
        "KETCH_TEST_KEYRING_FILE": str(tmp_path / "keyring.json"),
        "KETCH_LOAD": f"ketch.testing.scripted_plugin,{TOOLS}",
        "KETCH_PLUGINS": ",".join(STORE_PLUGINS + ["headless", "scripted_plugin", "store_tools"]),
        "KETCH_SCRIPT_LOG": str(tmp_path / "requests.jsonl"),
    }
    if script is not None:
        path = tmp_path / "script.json"
        path.write_text(json.dumps(script), encoding="utf-8")
        env["KETCH_SCRIPT"] = str(path)
    env.update(extra)
    return env


def run_ketch(
    *args: str, cwd: Path, env: dict[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``ketch ARGS`` with no terminal at all (no controlling tty: nothing can prompt)."""
    return subprocess.run(
        [sys.executable, "-m", "ketch", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
    )


def logged_requests(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "requests.jsonl"
    if not path.exists():
        return []
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
