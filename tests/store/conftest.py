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
    with throwaway_keyring() as backend:
        yield backend


def state_dir() -> Path:
    return Path(os.environ["KETCH_STATE_DIR"])


def db_path() -> Path:
    return state_dir() / "sessions.db"


def cli_env(tmp_path: Path, script: list[dict[str, Any]] | None = None, **extra: str) -> dict[str, str]:
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


def run_ketch(*args: str, cwd: Path, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ketch", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def logged_requests(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "requests.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
