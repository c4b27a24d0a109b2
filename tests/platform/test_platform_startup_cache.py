"""The discovery cache against real installs: ``pip install``, upgrade and uninstall of
a contrib plugin in a fresh virtualenv, one HOME (one cache) throughout."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.platform.venvs import CONTRIB, IGNORE, fresh_venv, pip, plugins_in

pytestmark = pytest.mark.slow


def stable(listing: dict[str, dict[str, object]]) -> dict[str, tuple[object, ...]]:
    """What a listing says apart from its timings."""
    return {
        name: (p["status"], p["distribution"], p["version"], str(p["provides"]))
        for name, p in listing.items()
    }


def test_discovery_cache_follows_pip_install_upgrade_and_uninstall(
    tmp_path: Path, ketch_wheel: Path
) -> None:
    python = fresh_venv(tmp_path / "venv")
    pip("--python", str(python), "install", str(ketch_wheel))
    home, cwd = tmp_path / "home", tmp_path
    cache = home / "cache" / "plugins.json"

    before = plugins_in(python, home, cwd)
    assert "guards" in before and "git" not in before
    assert cache.exists()
    assert stable(plugins_in(python, home, cwd)) == stable(before)  # from the cache

    project = tmp_path / "ketch-git"
    shutil.copytree(CONTRIB / "ketch-git", project, ignore=IGNORE)
    pip("--python", str(python), "install", str(project))
    git = plugins_in(python, home, cwd)["git"]
    assert (git["status"], git["distribution"], git["version"]) == ("ok", "ketch-git", "0.1.0")

    pyproject = project / "pyproject.toml"
    pyproject.write_text(
        re.sub(r'(?m)^version = "0\.1\.0"', 'version = "0.2.0"', pyproject.read_text())
    )
    pip("--python", str(python), "install", "--upgrade", str(project))
    assert plugins_in(python, home, cwd)["git"]["version"] == "0.2.0"

    removed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "uninstall",
            "-y",
            "-q",
            "ketch-git",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert removed.returncode == 0, removed.stderr
    after = plugins_in(python, home, cwd)
    assert "git" not in after
    assert stable(after) == stable(before)
