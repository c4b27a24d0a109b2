"""Fixtures for the tool tests (helpers live in ketch_tools_testkit)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ketch_tools_testkit import ToolSession, make_session


@pytest.fixture
def tools(tmp_path: Path) -> Callable[..., ToolSession]:
    """``tools(settings=..., approver=...)`` -> a ToolSession in ``tmp_path/ws``."""

    def make(**kwargs: Any) -> ToolSession:
        return make_session(tmp_path, **kwargs)

    return make
