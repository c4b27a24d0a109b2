from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.headless.headless_kit import Headless


@pytest.fixture
def headless(tmp_path: Path) -> Headless:
    config = Path(os.environ["KETCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text('[storage]\nencryption = "off"\n', encoding="utf-8")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return Headless(workspace.resolve(), scratch)
