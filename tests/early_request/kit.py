"""Starts of ``ketch -p`` through the console script's ``main``, in one home and workspace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ketch.testing import isolated_env

PROBE = Path(__file__).with_name("launch_probe.py")
EARLY_THREAD = "ketch-early-request"
PROVIDER_VARIABLES = ("KETCH_", "OPENAI_", "ANTHROPIC_", "OLLAMA_", "GEMINI_", "GOOGLE_")


class Starts:
    """Runs of ``ketch -p`` in one home and one workspace (``launch_probe.py`` notes each
    connection to the model server: from which thread, and whether pydantic was loaded)."""

    def __init__(self, tmp_path: Path, port: int, env: dict[str, str], argv: list[str]) -> None:
        self.tmp = tmp_path
        self.home = tmp_path / "home"
        self.ws = tmp_path / "ws"
        self.ws.mkdir(exist_ok=True)
        self.port = port
        self.provider_env = env
        self.argv = argv

    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(PROVIDER_VARIABLES) and "proxy" not in k.lower()
        }
        env.update(isolated_env(self.home))
        env.pop("KETCH_PLUGINS", None)  # the default build
        env.update(
            {
                "HOME": str(self.home),
                "PYTHON_KEYRING_BACKEND": "ketch.testing.keyring_backend.FileKeyring",
                "KETCH_TEST_KEYRING_FILE": str(self.tmp / "keyring.json"),
                "PROBE_PORT": str(self.port),
                # One name for every run: the environment is part of the record's key.
                "PROBE_OUT": str(self.tmp / "connects.json"),
            }
        )
        env.update(self.provider_env)
        return env

    def run(
        self, prompt: str, command: list[str] | None = None
    ) -> tuple[subprocess.CompletedProcess[str], list[str]]:
        """One start (through the probe, or ``command``); its result and the threads that
        connected to the model server (the probe's note)."""
        out = self.tmp / "connects.json"
        out.unlink(missing_ok=True)
        argv = [*(command or [sys.executable, str(PROBE)]), *self.argv, "-p", prompt]
        done = subprocess.run(
            argv,
            cwd=self.ws,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        connects: list[dict[str, Any]] = json.loads(out.read_text()) if out.exists() else []
        if connects and connects[0]["thread"] == EARLY_THREAD:
            assert connects[0]["pydantic"] is False, "sent early, but after ketch loaded pydantic"
        return done, [c["thread"] for c in connects]

    def warm(self, *prompts: str) -> None:
        """Two starts: the record written, then confirmed (the same request twice)."""
        for prompt in prompts or ("say one", "say two"):
            done, threads = self.run(prompt)
            assert done.returncode == 0, done.stderr[-2000:]
            assert EARLY_THREAD not in threads
        assert json.loads(self.record().read_text())["confirmed"] is True

    def record(self) -> Path:
        return self.home / "cache" / "early-request.json"
