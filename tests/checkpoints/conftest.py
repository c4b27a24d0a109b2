"""A throwaway keyring for every checkpoint test, and an in-process harness with the
plugins a checkpointed session needs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ketch.testing import Harness
from ketch.testing.keyring_backend import MemoryKeyring, throwaway_keyring
from tests.checkpoints.kit import PLUGINS


@pytest.fixture(autouse=True)
def memory_keyring() -> Iterator[MemoryKeyring]:
    with throwaway_keyring() as backend:
        yield backend


@pytest.fixture
def harness(tmp_path: Path) -> Callable[..., Harness]:
    """``harness(script, config=..., plugins=[...])``: full-access, so scripted calls run."""

    def make(script: list[dict[str, Any]], **kwargs: Any) -> Harness:
        settings = {"profile": "full-access", **kwargs.pop("settings", {})}
        return Harness.create(
            tmp_path,
            script=script,
            bundled=[p for p in PLUGINS if p != "headless"],
            settings=settings,
            **kwargs,
        )

    return make
