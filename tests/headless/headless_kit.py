"""Running ``ketch`` headless as a subprocess with the scripted model, stdin included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCRIPTED = "ketch.testing.scripted_plugin"


def isolated_workspace(tmp_path: Path) -> tuple[Path, Path]:
    """(workspace, scratch) under ``tmp_path``, with a user config that saves sessions
    unencrypted (these tests are about the frontends, not the store's key)."""
    config = Path(os.environ["KETCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text('[storage]\nencryption = "off"\n', encoding="utf-8")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return workspace.resolve(), scratch


def user(content: Any, **extra: Any) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": content}, **extra})


def interrupt(request_id: str = "req_1") -> str:
    return json.dumps(
        {"type": "control_request", "request_id": request_id, "request": {"subtype": "interrupt"}}
    )


@dataclass
class Headless:
    workspace: Path
    scratch: Path

    def env(self, **extra: str) -> dict[str, str]:
        return {
            **os.environ,
            "KETCH_LOAD": SCRIPTED,
            "KETCH_SCRIPT": str(self.scratch / "script.json"),
            "KETCH_SCRIPT_LOG": str(self.scratch / "requests.jsonl"),
            **extra,
        }

    def script(self, steps: list[dict[str, Any]]) -> None:
        (self.scratch / "script.json").write_text(json.dumps(steps), encoding="utf-8")
        (self.scratch / "requests.jsonl").unlink(missing_ok=True)

    def requests(self) -> list[dict[str, Any]]:
        path = self.scratch / "requests.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "ketch", "--provider", "scripted", *args]

    def run(
        self, *args: str, stdin: str = "", timeout: float = 60, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args),
            cwd=self.workspace,
            env=self.env(**env),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def popen(self, *args: str, **env: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(*args),
            cwd=self.workspace,
            env=self.env(**env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


def events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def of(items: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in items if e.get("type") == kind]


def read_until(proc: subprocess.Popen[str], kind: str) -> Iterator[dict[str, Any]]:
    """Stdout events up to and including the first of ``kind``."""
    assert proc.stdout is not None
    for line in proc.stdout:
        event = json.loads(line)
        yield event
        if event.get("type") == kind:
            return
    raise AssertionError(f"stdout ended before a {kind!r} event")


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for m in request["messages"] for p in m["parts"] if p["type"] == "tool_result"]


def texts(request: dict[str, Any]) -> list[str]:
    return [
        p.get("text", "") for m in request["messages"] for p in m["parts"] if p["type"] == "text"
    ]
