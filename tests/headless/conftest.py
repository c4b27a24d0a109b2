from __future__ import annotations

from pathlib import Path

import pytest

from tests.headless.headless_kit import Headless, isolated_workspace


@pytest.fixture
def headless(tmp_path: Path) -> Headless:
    return Headless(*isolated_workspace(tmp_path))
