"""A broken user config is named, with file and line, wherever it stops ketch: ``ketch
-p``, the interactive shell and ``ketch acp``; never "no model provider is configured".
A value of the wrong type drops that key only; the rest of the file applies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.stdio_kit import StdioProcess

ROOT = Path(__file__).resolve().parents[2]
PROVIDER = 'default_provider = "s"\n[providers.s]\nkind = "scripted"\nmodel = "m"\n'


def _write(config: Path, kind: str) -> str:
    """Break the config one way; what the message must name (``path`` or ``path:line``)."""
    config.parent.mkdir(parents=True, exist_ok=True)
    path = str(config)
    if kind == "directory":
        config.mkdir()
        return f"{path}: cannot read"
    data = {
        "invalid TOML": (PROVIDER + "x = = 1\n").encode(),
        "a duplicate table": (PROVIDER + "[providers.s]\n").encode(),
        "invalid UTF-8": PROVIDER.encode() + b'note = "\xff"\n',
        "over 1 MiB": PROVIDER.encode() + b"#" * (1024 * 1024 + 10) + b"\n",
        "nested too deep": (PROVIDER + "x = " + "[" * 5000 + "]" * 5000 + "\n").encode(),
    }[kind]
    config.write_bytes(data)
    line = {
        "invalid TOML": ":5",
        "a duplicate table": ":5",
        "invalid UTF-8": ":5",
        "over 1 MiB": "",
        "nested too deep": ":5",
    }[kind]
    return f"{path}{line}:"


KINDS = [
    "invalid TOML",
    "a duplicate table",
    "invalid UTF-8",
    "over 1 MiB",
    "nested too deep",
    "directory",
]


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "KETCH_LOAD": "ketch.testing.scripted_plugin",
        "PYTHONPATH": str(ROOT),
        "OPENAI_API_KEY": "",
        "ANTHROPIC_API_KEY": "",
        "GEMINI_API_KEY": "",
        "OLLAMA_HOST": "http://127.0.0.1:9",
    }


def _config() -> Path:
    return Path(os.environ["KETCH_CONFIG_DIR"]) / "config.toml"


@pytest.mark.parametrize("kind", KINDS)
def test_headless_names_the_broken_file_and_its_line(kind: str, tmp_path: Path) -> None:
    where = _write(_config(), kind)
    proc = subprocess.run(
        [sys.executable, "-m", "ketch", "-p", "hi"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert where in proc.stderr, proc.stderr
    assert "the configuration could not be used" in proc.stderr.splitlines()[0]
    assert "Set one up in any of these ways" not in proc.stderr  # not the first-run help
    assert "Traceback" not in proc.stderr


def test_a_wrong_type_drops_that_key_only(tmp_path: Path) -> None:
    config = _config()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(PROVIDER + '[loop]\nmax_iterations = "many"\nmax_retries = 0\n')
    proc = subprocess.run(
        [sys.executable, "-m", "ketch", "-p", "hi", "--no-save"],
        cwd=tmp_path,
        env={**_env(), "KETCH_SCRIPT": str(tmp_path / "script.json")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr  # the provider from the same file still applies
    assert proc.stdout == "(script exhausted)\n"
    assert f"{config}:6: loop.max_iterations:" in proc.stderr
    assert "ignoring loop.max_iterations, the rest of this file applies" in proc.stderr
    shown = subprocess.run(
        [sys.executable, "-m", "ketch", "config", "show", "--json"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    settings = json.loads(shown.stdout)["settings"]
    assert settings["loop"]["max_retries"] == 0 and settings["loop"]["max_iterations"] == 100


def test_ketch_acp_answers_session_new_with_the_file_and_line(tmp_path: Path) -> None:
    where = _write(_config(), "a duplicate table")
    with StdioProcess(
        [sys.executable, "-m", "ketch", "acp"],
        cwd=tmp_path,
        env=_env(),
        stderr_path=tmp_path / "stderr.log",
    ) as agent:
        agent.send(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
        )
        agent.until(lambda v: v.get("id") == 0)
        agent.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "session/new",
                "params": {"cwd": str(tmp_path), "mcpServers": []},
            }
        )
        answer, _ = agent.until(lambda v: v.get("id") == 1, timeout=60)
        agent.close_stdin()
        agent.wait(30)
    assert where in answer["error"]["message"], answer
    assert "Traceback" not in agent.stderr()
