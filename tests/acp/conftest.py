from __future__ import annotations

from pathlib import Path

import pytest

from tests.acp.acp_kit import AcpEnv
from tests.headless.headless_kit import isolated_workspace


@pytest.fixture
def acp_env(tmp_path: Path) -> AcpEnv:
    return AcpEnv(*isolated_workspace(tmp_path))
