"""The real ``ketch`` command in a subprocess, with the scripted model, the bundled
plugins, a file keyring (the store encrypts for real) and the test tools."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from ketch.testing import isolated_env
from ketch.testing.cli import CliResult, run_cli

ROOT = Path(__file__).resolve().parents[2]
TOOLS = "agenttools=tests.agents.agent_test_tools"
SCRIPTED = "ketch.testing.scripted_plugin"


class Cli:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.workspace = tmp_path / "ws"
        self.workspace.mkdir(exist_ok=True)
        self.home = tmp_path / "home"
        self.home.mkdir(exist_ok=True)
        self.log = tmp_path / "tools.jsonl"
        self.env = {
            **isolated_env(tmp_path / "ketch"),
            "HOME": str(self.home),
            "PYTHONPATH": str(ROOT),
            "PYTHON_KEYRING_BACKEND": "ketch.testing.keyring_backend.FileKeyring",
            "KETCH_TEST_KEYRING_FILE": str(tmp_path / "keyring.json"),
            "KETCH_LOAD": TOOLS,
            "AGENT_TEST_LOG": str(self.log),
        }
        self.config_dir = Path(self.env["KETCH_CONFIG_DIR"])
        self.runs = itertools.count()

    def config(self, text: str) -> None:
        self.config_dir.mkdir(parents=True, exist_ok=True)
        (self.config_dir / "config.toml").write_text(text, encoding="utf-8")

    def __call__(
        self,
        *args: str,
        script: list[dict[str, Any]] | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 90,
    ) -> CliResult:
        scratch = self.tmp / f"cli-{next(self.runs)}"
        return run_cli(
            list(args),
            cwd=self.workspace,
            env={**self.env, **(env or {})},
            script=script,
            scratch=scratch,
            timeout=timeout,
        )

    def tool_runs(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [
            json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines() if line
        ]


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def clean(result: CliResult) -> None:
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result.stderr[
        -3000:
    ]


def first_prompt(request: dict[str, Any]) -> str:
    """The text of a logged request's first user message (the task, for a subagent)."""
    for message in request["messages"]:
        if message["role"] == "user":
            return "".join(p.get("text", "") for p in message["parts"] if p.get("type") == "text")
    return ""


def requests_for(result: CliResult, marker: str) -> list[dict[str, Any]]:
    return [r for r in result.requests if marker in first_prompt(r)]


def tool_names(request: dict[str, Any]) -> set[str]:
    return {t["name"] for t in request["tools"]}
