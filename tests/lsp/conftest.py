"""A throwaway keyring for every language-server test (the store and checkpoints)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ketch.testing.keyring_backend import MemoryKeyring, throwaway_keyring


@pytest.fixture(autouse=True)
def memory_keyring() -> Iterator[MemoryKeyring]:
    with throwaway_keyring() as backend:
        yield backend
