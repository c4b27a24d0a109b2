from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.acp.acp_kit import AcpEnv


@pytest.fixture
def acp_env(tmp_path: Path) -> AcpEnv:
    config = Path(os.environ["KETCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text('[storage]\nencryption = "off"\n', encoding="utf-8")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return AcpEnv(workspace.resolve(), scratch)
