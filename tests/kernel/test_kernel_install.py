"""A clean checkout installs with pip and its console script works; SIGINT cancels a turn."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_pip_install_of_a_clean_checkout(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to take a clean copy from")
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(checkout)], check=True)
    # Uncommitted work is part of what we test here: copy the tracked files' current state.
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, tracked):
        source = ROOT / name.decode()
        if source.is_file():
            target = checkout / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True, system_site_packages=True)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", str(checkout)],
        check=True,
        timeout=300,
        capture_output=True,
    )
    script = env_dir / "bin" / "ketch"
    env = {**os.environ, "PYTHONPATH": ""}
    version = subprocess.run(
        [script, "--version"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert version.returncode == 0 and version.stdout.startswith("ketch 0.")
    helped = subprocess.run(
        [script, "--help"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert helped.returncode == 0 and "--output-format" in helped.stdout
    listed = subprocess.run(
        [script, "plugins", "--json"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert listed.returncode == 0, listed.stderr
    plugins = {p["name"]: p for p in json.loads(listed.stdout)}
    assert plugins["guards"]["status"] == "ok" and plugins["headless"]["status"] == "ok"
    # It really is the installed copy, not the working tree.
    where = subprocess.run(
        [python, "-c", "import ketch; print(ketch.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert str(env_dir) in where.stdout


def test_sigint_cancels_a_headless_turn(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "never", "delay": 60}]))
    env = {**os.environ, "KETCH_LOAD": "ketch.testing.scripted_plugin", "KETCH_SCRIPT": str(script)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ketch",
            "-p",
            "wait",
            "--provider",
            "scripted",
            "--output-format",
            "stream-json",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    lines: list[str] = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        lines.append(line)
        if '"user_prompt"' in line:
            break
    time.sleep(0.3)  # the request is in flight
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    events = [json.loads(x) for x in (lines + out.splitlines()) if x.strip()]
    assert events[-1]["type"] == "turn_end" and events[-1]["stop_reason"] == "cancelled"
    assert proc.returncode == 130  # 128 + SIGINT, the shell's convention
    assert "Traceback" not in err
