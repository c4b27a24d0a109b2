"""Fixtures shared by the platform tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.platform.venvs import IGNORE, ROOT, pip


@pytest.fixture(scope="session")
def ketch_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel of this checkout, built from a copy (a build never writes into the repo)."""
    src = tmp_path_factory.mktemp("ketch-src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, src / name)
    for folder in ("kernel", "plugins"):
        shutil.copytree(ROOT / folder, src / folder, ignore=IGNORE)
    wheels = tmp_path_factory.mktemp("wheels")
    pip("wheel", "-w", str(wheels), str(src))
    [wheel] = wheels.glob("ketch-*.whl")
    return wheel
