"""A Claude Code marketplace of real public plugins (``marketplace/``, see SOURCES.md)
copied into a temporary folder and made a git repository, and the real ``ketch``
command (scripted model, bundled plugins) to add it, install from it and run turns."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ketch.testing.cli import CliResult
from tests.agents.conftest import Cli
from tests.trust.hostile import GIT_ENV

HERE = Path(__file__).resolve().parent
MARKET = "ketch-test-market"
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        env={**os.environ, **GIT_ENV, "HOME": str(repo.parent), **(env or {})},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


def make_marketplace(dest: Path) -> Path:
    """The test marketplace at ``dest``, a git repository with one commit."""
    shutil.copytree(HERE / "marketplace", dest, symlinks=True)
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "marketplace")
    return dest


class PluginCli(Cli):
    """``ketch`` in a subprocess, with a marketplace and the data dir it installs into."""

    def __init__(self, tmp_path: Path) -> None:
        super().__init__(tmp_path)
        self.market = make_marketplace(tmp_path / "market")
        self.marker = tmp_path / "mcp-started"
        self.env.update(
            {
                "KETCH_TEST_PYTHON": sys.executable,
                "KETCH_TEST_SERVER": str(HERE.parent / "mcp" / "mcp_test_server.py"),
                "KETCH_TEST_MARKER": str(self.marker),
                "KETCH_PASSPHRASE": "plugin tests",
            }
        )
        self.data = Path(self.env["XDG_DATA_HOME"]) / "ketch" / "claude-plugins"

    def ok(self, *args: str, **kwargs: Any) -> CliResult:
        result = self(*args, **kwargs)
        assert "Traceback" not in result.stderr + result.stdout, result.stderr[-3000:]
        assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
        return result

    def installed(self, plugin: str) -> Path:
        """The installed plugin's own folder (files, pins, data)."""
        return self.data / "plugins" / f"{plugin}@{MARKET}"

    def add_and_install(self, *plugins: str) -> None:
        self.ok("plugin", "marketplace", "add", str(self.market))
        for plugin in plugins:
            self.ok("plugin", "install", f"{plugin}@{MARKET}", "--yes")

    def turn(self, prompt: str, script: list[dict[str, Any]], *extra: str) -> CliResult:
        result = self(
            "-p",
            prompt,
            "--provider",
            "scripted",
            "--output-format",
            "stream-json",
            *extra,
            script=script,
        )
        assert "Traceback" not in result.stderr + result.stdout, result.stderr[-3000:]
        return result


@pytest.fixture
def cli(tmp_path: Path) -> PluginCli:
    return PluginCli(tmp_path)


def request_text(request: dict[str, Any]) -> str:
    """Everything a logged request said to the model, as one text."""
    return json.dumps(request, ensure_ascii=False)


def notices(result: CliResult) -> list[str]:
    return [e.get("message", "") for e in result.of_type("notice")] + result.stderr.splitlines()
