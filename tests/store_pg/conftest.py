"""The PostgreSQL store's tests: a real server (``.ci/postgres`` starts one and exports
``KETCH_TEST_PG_URL``; without it these skip, saying so), a fresh database per test, and
"machines": separate HOMEs (state dir, config dir, keyring) running ``ketch`` as
subprocesses against the one server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ketch.testing.keyring_backend import throwaway_keyring

ROOT = Path(__file__).resolve().parents[2]
# Read at import: the test-wide isolation fixture clears KETCH_* variables from the environment.
PG_URL = os.environ.get("KETCH_TEST_PG_URL", "")
PG_DIR = os.environ.get("KETCH_TEST_PG_DIR", "")
PLUGINS = ["guards", "store", "store_pg", "crypto", "headless", "scripted_plugin", "store_tools"]
TOOLS = "store_tools=tests.store.store_test_tools"


def _admin_url() -> str:
    url = PG_URL
    if not url:
        pytest.skip(
            "no PostgreSQL server for the tests: KETCH_TEST_PG_URL is unset (bash .ci/run starts one; "
            'by hand: eval "$(bash .ci/postgres)")'
        )
    return url


def _sql(url: str, statement: str) -> None:
    import pg8000.dbapi

    from ketch_store_pg.connection import parse_url

    target = parse_url(url)
    conn = pg8000.dbapi.connect(
        user=target.user,
        host=target.host,
        port=target.port,
        database=target.database,
        password=target.password,
    )
    conn.autocommit = True
    try:
        conn.cursor().execute(statement)
    finally:
        conn.close()


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty database on the test server, dropped afterwards."""
    admin = _admin_url()
    name = f"ketch_t_{uuid.uuid4().hex[:12]}"
    _sql(admin, f"CREATE DATABASE {name}")
    base = admin.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        _sql(admin, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(autouse=True)
def _no_shared_kek() -> Iterator[None]:
    from ketch_crypto.manager import forget

    forget()
    with throwaway_keyring():
        yield
    forget()


@dataclass
class Machine:
    """One HOME: its own state dir, config dir and keyring file; the same server."""

    root: Path
    url: str
    name: str
    lease: float = 30.0
    extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for sub in ("state", "config"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "config" / "config.toml").write_text(
            f'[storage]\nurl = "{self.url}"\nlease = {self.lease}\nwriter_wait = 120\n',
            encoding="utf-8",
        )

    def env(self, script: list[dict[str, Any]] | None = None, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KETCH_")}
        env.update(
            {
                "PYTHONPATH": str(ROOT),
                "KETCH_STATE_DIR": str(self.root / "state"),
                "KETCH_CONFIG_DIR": str(self.root / "config"),
                "KETCH_CACHE_DIR": str(self.root / "cache"),
                "KETCH_AUTOLOAD": "bundled",
                "PYTHON_KEYRING_BACKEND": "ketch.testing.keyring_backend.FileKeyring",
                "KETCH_TEST_KEYRING_FILE": str(self.root / "keyring.json"),
                "KETCH_LOAD": f"ketch.testing.scripted_plugin,{TOOLS}",
                "KETCH_PLUGINS": ",".join(PLUGINS),
                "KETCH_SCRIPT_LOG": str(self.root / "requests.jsonl"),
            }
        )
        if script is not None:
            path = self.root / f"script-{uuid.uuid4().hex[:8]}.json"
            path.write_text(json.dumps(script), encoding="utf-8")
            env["KETCH_SCRIPT"] = str(path)
        env.update(self.extra)
        env.update(extra)
        return env

    def ketch(
        self,
        *args: str,
        cwd: Path,
        script: list[dict[str, Any]] | None = None,
        timeout: float = 120,
        **extra: str,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ketch", *args],
            cwd=cwd,
            env=self.env(script, **extra),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            start_new_session=True,
        )

    def popen(
        self, *args: str, cwd: Path, script: list[dict[str, Any]] | None = None, **extra: str
    ) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "ketch", *args],
            cwd=cwd,
            env=self.env(script, **extra),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def public_key(self, cwd: Path) -> str:
        run = self.ketch("store", "key", "identity", cwd=cwd)
        assert run.returncode == 0, run.stderr
        return run.stdout.strip()

    def requests(self) -> list[dict[str, Any]]:
        path = self.root / "requests.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """One project path both machines have (a checkout at the same place)."""
    ws = tmp_path / "project"
    ws.mkdir()
    return ws


@pytest.fixture
def team(tmp_path: Path, pg_url: str, workspace: Path) -> tuple[Machine, Machine]:
    """Two machines sharing one team key: ``a`` made the store, ``b`` was added by ``a``."""
    a = Machine(tmp_path / "home-a", pg_url, "alice")
    b = Machine(tmp_path / "home-b", pg_url, "bob")
    first = a.ketch(
        "store", "key", "members", "list", cwd=workspace
    )  # a's first open makes the store
    assert first.returncode == 0, first.stderr
    added = a.ketch("store", "key", "members", "add", "bob", b.public_key(workspace), cwd=workspace)
    assert added.returncode == 0, added.stderr
    return a, b
