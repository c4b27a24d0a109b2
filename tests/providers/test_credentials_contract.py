"""The credentials contract (``ketch_frontend_kit.credentials``): a frontend keeps a key
the person pasted in whichever secret store answers first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ketch import hookimpl
from ketch.testing import Harness
from ketch_frontend_kit import credentials
from ketch_frontend_kit.credentials import keep


def test_a_store_keeps_a_key_through_the_credentials_contract(tmp_path: Path) -> None:
    kept: list[tuple[str, str, str]] = []

    class Vault:
        @hookimpl
        def credentials_set(self, provider: str, kind: str, key: str) -> str:
            kept.append((provider, kind, key))
            return "the test vault"

    class Full:
        @hookimpl
        def credentials_set(self, provider: str, key: str) -> None:
            return None  # cannot keep it: the next store is asked

    class Frontend:  # the side that keeps keys declares the contract
        @hookimpl
        def ketch_add_hookspecs(self, pluginmanager: Any) -> None:
            pluginmanager.add_hookspecs(credentials)

    h = Harness.create(
        tmp_path,
        plugins=[("vault", Vault()), ("full", Full()), ("frontend", Frontend())],
        bundled=["guards"],
    )
    assert keep(h.kernel, "work", "sk-test", "openai") == "the test vault"
    assert kept == [("work", "openai", "sk-test")]
