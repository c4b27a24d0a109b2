"""pytest fixtures for ketch plugin authors (``-p ketch.testing.pytest_plugin``).

* ``ketch_env``: config/state/cache dirs under tmp_path, only bundled plugins autoload;
* ``ketch_workspace``: an empty workspace directory;
* ``ketch_harness``: a factory, ``ketch_harness(script=[...], plugins=[...])`` -> Harness.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ketch.testing.harness import Harness, isolated_env


@pytest.fixture
def ketch_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = isolated_env(tmp_path / "ketch-home")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


@pytest.fixture
def ketch_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ws


@pytest.fixture
def ketch_harness(tmp_path: Path, ketch_env: dict[str, str]) -> Callable[..., Harness]:
    def make(**kwargs: Any) -> Harness:
        return Harness.create(tmp_path, **kwargs)

    return make
