"""Test-wide isolation: every test gets its own config/state/cache dirs, and only the
plugins bundled with ketch autoload (never whatever else is installed on the machine).
Tests that mean to discover third-party plugins unset KETCH_AUTOLOAD themselves."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from ketch.testing.harness import isolated_env

pytest_plugins = ["ketch.testing.pytest_plugin"]

ROOT = Path(__file__).resolve().parent.parent
KETCH = str(Path(sys.executable).with_name("ketch"))


@pytest.fixture(autouse=True)
def _isolate(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    home = tmp_path_factory.mktemp("home")
    env = isolated_env(home)
    for key in list(os.environ):
        if key.startswith("KETCH_") and key not in env:
            monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env
