"""Fixtures for the effect-based security tests (see canaries.py and runner.py).

* ``world``: a :class:`canaries.World` (``~/.ssh`` a plain directory);
* ``make_world(ssh_link=False)``: more worlds (e.g. ``~/.ssh`` a symlink elsewhere),
  each closed after the test;
* ``needs_sandbox``: a marker that skips where bwrap cannot run (with the reason).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from canaries import World, default_base  # noqa: E402


@pytest.fixture
def make_world() -> Iterator[Callable[..., World]]:
    made: list[World] = []

    def make(**kwargs: object) -> World:
        world = World.create(default_base(), **kwargs)  # type: ignore[arg-type]
        made.append(world)
        return world

    yield make
    for world in made:
        world.close()


@pytest.fixture
def world(make_world: Callable[..., World]) -> World:
    return make_world()


def sandbox_probe() -> tuple[bool, str]:
    from ketch_sandbox.bwrap import probe

    found = probe()
    return found.available, found.reason


_AVAILABLE, _REASON = sandbox_probe()
needs_sandbox = pytest.mark.skipif(not _AVAILABLE, reason=f"no working sandbox here: {_REASON}")
