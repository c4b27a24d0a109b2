"""Running the real ``ketch`` command in a subprocess, with a scripted model.

``run_cli(["-p", "hi", "--provider", "scripted"], cwd=ws, env=env, script=[text("ok")])``
loads :mod:`ketch.testing.scripted_plugin` through ``KETCH_LOAD`` so the subprocess has
the ``scripted`` provider kind, writes the script where it reads it, and returns the
exit code, the output, the parsed ``stream-json`` events and every request the model
received. This is the end-to-end view: entry-point discovery, the command line, the
frontend and the exit code, exactly as a user runs ketch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCRIPTED_PLUGIN = "ketch.testing.scripted_plugin"


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str
    log_path: Path | None = None

    @property
    def events(self) -> list[dict[str, Any]]:
        """The ``--output-format stream-json`` events on stdout, parsed."""
        return [json.loads(line) for line in self.stdout.splitlines() if line.startswith("{")]

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request the scripted model received (ProviderRequest as JSON)."""
        if self.log_path is None or not self.log_path.exists():
            return []
        return [
            json.loads(line)
            for line in self.log_path.read_text(encoding="utf-8").splitlines()
            if line
        ]


def run_cli(
    args: list[str],
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    script: list[dict[str, Any]] | None = None,
    input: str | None = None,
    timeout: float = 60.0,
    scratch: Path | None = None,
    python: str | None = None,
) -> CliResult:
    """Run ``python -m ketch ARGS`` in ``cwd``; with ``script``, the model is scripted.

    ``env`` is layered over the current environment (use :func:`isolated_env` for the
    config/state directories). The script and the request log go in ``scratch`` (a
    new temporary directory by default). ``python`` runs another interpreter (a
    virtualenv's) instead of this one. Nothing is raised for a non-zero exit: check
    ``returncode``.
    """
    environ = {**os.environ, **(env or {})}
    log_path: Path | None = None
    if script is not None:
        state = (
            Path(scratch) if scratch is not None else Path(tempfile.mkdtemp(prefix="ketch-cli-"))
        )
        state.mkdir(parents=True, exist_ok=True)
        (state / "script.json").write_text(json.dumps(script), encoding="utf-8")
        log_path = state / "requests.jsonl"
        log_path.unlink(missing_ok=True)
        loads = [item for item in environ.get("KETCH_LOAD", "").split(",") if item.strip()]
        if SCRIPTED_PLUGIN not in loads:
            loads.append(SCRIPTED_PLUGIN)
        environ.update(
            KETCH_LOAD=",".join(loads),
            KETCH_SCRIPT=str(state / "script.json"),
            KETCH_SCRIPT_LOG=str(log_path),
        )
    proc = subprocess.run(
        [python or sys.executable, "-m", "ketch", *args],
        cwd=cwd,
        env=environ,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=None if input is not None else subprocess.DEVNULL,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr, log_path)
