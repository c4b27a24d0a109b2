"""Fixtures for the effect-based security tests (see canaries.py and runner.py).

* ``world``: a :class:`canaries.World` (``~/.ssh`` a plain directory);
* ``make_world(ssh_link=False)``: more worlds (e.g. ``~/.ssh`` a symlink elsewhere),
  each closed after the test;

The marker ``runner.needs_sandbox`` skips a test where bwrap cannot run (with the reason).
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
