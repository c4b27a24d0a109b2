"""The example plugins in contrib/: each is a complete, separately installable project
whose own test suite (written with the plugin author's kit) passes, and which ketch
discovers through its entry point.

The slow check (a fresh virtualenv, ``pip install`` from the folder) is in
test_platform_venv.py; here each project runs from its source tree.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from ketch.testing import isolated_env
from ketch.testing.cli import run_cli
from ketch.testing.dists import write_distribution

ROOT = Path(__file__).resolve().parents[2]
CONTRIB = ROOT / "contrib"
PROJECTS = sorted(p.parent.name for p in CONTRIB.glob("*/pyproject.toml"))


def project(name: str) -> dict[str, Any]:
    return tomllib.loads((CONTRIB / name / "pyproject.toml").read_text(encoding="utf-8"))


def test_there_are_a_tool_plugin_and_a_provider_plugin() -> None:
    assert {"ketch-git", "ketch-router"} <= set(PROJECTS)


@pytest.mark.parametrize("name", PROJECTS)
def test_each_is_a_complete_project(name: str) -> None:
    meta = project(name)["project"]
    assert meta["name"] == name
    assert any(re.match(r"ketch\b", dep) for dep in meta["dependencies"]), "depends on ketch"
    assert meta["entry-points"]["ketch"], "registers in the ketch entry-point group"
    assert (CONTRIB / name / "README.md").read_text(encoding="utf-8").startswith(f"# {name}")
    assert list((CONTRIB / name / "tests").glob("test_*.py"))


@pytest.mark.parametrize("name", PROJECTS)
def test_each_passes_its_own_tests_with_the_kit(name: str) -> None:
    """The project's tests run under its own pytest config; the fixtures come from the
    ``ketch`` pytest11 plugin, exactly as for a plugin developed outside this repo."""
    where = CONTRIB / name
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(where / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-W",
            "error::pytest.PytestUnknownMarkWarning",
        ],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    passed = re.search(r"(\d+) passed", proc.stdout)
    assert passed and int(passed.group(1)) >= 8, proc.stdout[-500:]
    assert "failed" not in proc.stdout and "error" not in proc.stdout.splitlines()[-1]


@pytest.mark.parametrize("name", PROJECTS)
def test_each_is_discovered_through_its_entry_point(name: str, tmp_path: Path) -> None:
    meta = project(name)["project"]
    site = tmp_path / "site"
    write_distribution(
        site,
        meta["name"],
        version=meta["version"],
        entry_points={"ketch": meta["entry-points"]["ketch"]},
    )
    env = {
        **isolated_env(tmp_path / "home"),
        "KETCH_AUTOLOAD": "all",
        "PYTHONPATH": os.pathsep.join(
            [str(site), str(CONTRIB / name / "src"), os.environ.get("PYTHONPATH", "")]
        ),
    }
    result = run_cli(["plugins", "--json"], cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    [plugin_name] = meta["entry-points"]["ketch"]
    info = next(p for p in json.loads(result.stdout) if p["name"] == plugin_name)
    assert (info["status"], info["distribution"], info["version"]) == (
        "ok",
        name,
        meta["version"],
    ), info
    # What it registers, or (a plugin implementing another's hook) the hooks it implements.
    assert info["provides"] or info["hooks"], info
    assert info["warnings"] == []
