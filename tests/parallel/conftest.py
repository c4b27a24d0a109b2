"""Worktree sessions and background runs through real processes: the ``ketch`` command
as a subprocess with the scripted model, real git repositories, real signals."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ketch.testing import isolated_env
from ketch.testing.cli import CliResult, run_cli
from tests.trust.hostile import GIT_ENV

ROOT = Path(__file__).resolve().parents[2]
SCRIPTED = "ketch.testing.scripted_plugin"

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(cwd: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {done.stderr}")
    return done.stdout


def make_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for name, content in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(content)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "init")
    return path


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under ``root`` but .git, by content (what 'nothing changed' means)."""
    found = {}
    for path in sorted(root.rglob("*")):
        if ".git" in path.relative_to(root).parts or not path.is_file():
            continue
        found[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


class Ketch:
    """``python -m ketch`` in the repository, the scripted model, an encrypting store
    (a file keyring), and the test's own config/state folders."""

    def __init__(self, tmp_path: Path, repo: Path) -> None:
        self.tmp = tmp_path
        self.repo = repo
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        self.env = {
            **isolated_env(tmp_path / "k"),
            "HOME": str(home),
            "PYTHONPATH": str(ROOT),
            "PYTHON_KEYRING_BACKEND": "ketch.testing.keyring_backend.FileKeyring",
            "KETCH_TEST_KEYRING_FILE": str(tmp_path / "keyring.json"),
            **GIT_ENV,
        }
        self.state = Path(self.env["KETCH_STATE_DIR"])
        self.config_dir = Path(self.env["KETCH_CONFIG_DIR"])
        self.runs = itertools.count()

    def config(self, text: str) -> None:
        self.config_dir.mkdir(parents=True, exist_ok=True)
        (self.config_dir / "config.toml").write_text(text, encoding="utf-8")

    def scratch(self) -> Path:
        path = self.tmp / f"run-{next(self.runs)}"
        path.mkdir()
        return path

    def __call__(
        self,
        *args: str,
        script: list[dict[str, Any]] | None = None,
        cwd: Path | None = None,
        timeout: float = 90,
        env: dict[str, str] | None = None,
    ) -> CliResult:
        return run_cli(
            list(args),
            cwd=cwd or self.repo,
            env={**self.env, **(env or {})},
            script=script,
            scratch=self.scratch(),
            timeout=timeout,
        )

    def script_env(self, script: list[dict[str, Any]]) -> tuple[dict[str, str], Path]:
        """The environment of a process that plays ``script``; and its request log."""
        scratch = self.scratch()
        (scratch / "script.json").write_text(json.dumps(script), encoding="utf-8")
        log = scratch / "requests.jsonl"
        return {
            **os.environ,
            **self.env,
            "KETCH_LOAD": SCRIPTED,
            "KETCH_SCRIPT": str(scratch / "script.json"),
            "KETCH_SCRIPT_LOG": str(log),
        }, log

    def popen(
        self, *args: str, script: list[dict[str, Any]], cwd: Path | None = None
    ) -> tuple[subprocess.Popen[str], Path]:
        environ, log = self.script_env(script)
        proc = subprocess.Popen(
            [sys.executable, "-m", "ketch", *args],
            cwd=cwd or self.repo,
            env=environ,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        return proc, log

    def worktrees(self) -> dict[str, Any]:
        result = self("worktrees", "list", "--json")
        assert result.returncode == 0, result.stderr
        return {w["name"]: w for w in json.loads(result.stdout)["worktrees"]}


def requests(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line]


def tool_outputs(request: dict[str, Any]) -> list[str]:
    return [
        str(p.get("output", ""))
        for m in request["messages"]
        for p in m["parts"]
        if p["type"] == "tool_result"
    ]


def clean(result: CliResult) -> None:
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result.stderr[
        -3000:
    ]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(
        tmp_path / "proj", {"a.txt": "one\ntwo\nthree\n", "src/app.py": "print('hi')\n"}
    )


@pytest.fixture
def ketch(tmp_path: Path, repo: Path) -> Ketch:
    return Ketch(tmp_path, repo)
