"""Fresh virtualenvs for the platform tests: ketch from a wheel of this checkout,
plugins with a real ``pip install``, this environment's dependencies through a ``.pth``."""

from __future__ import annotations

import json
import shutil
import site
import subprocess
import sys
from pathlib import Path

from ketch.testing import isolated_env
from ketch.testing.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
CONTRIB = ROOT / "contrib"
IGNORE = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist", ".pytest_cache")


def pip(*args: str) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            *args,
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--disable-pip-version-check",
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def fresh_venv(where: Path) -> Path:
    """An empty virtualenv whose python sees this environment's packages after its own."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120
    )
    python = where / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "_ketch_test_parent_env.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return python


def plugins_in(python: Path, home: Path, cwd: Path) -> dict[str, dict[str, object]]:
    env = {**isolated_env(home), "KETCH_AUTOLOAD": "all"}
    env.pop("KETCH_PLUGINS", None)
    result = run_cli(["plugins", "--json"], cwd=cwd, env=env, python=str(python))
    assert result.returncode == 0, result.stderr
    return {p["name"]: p for p in json.loads(result.stdout)}
