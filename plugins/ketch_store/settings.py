"""The ``[storage]`` table."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ketch.api import Section, SettingsSection


class StorageSettings(Section):
    encryption: Literal["on", "off"] = "on"
    # Sessions elsewhere than the SQLite file: "postgresql://user@host/db" (ketch_store_pg)
    # or "sqlite:///path"; KETCH_STORE_URL overrides. Empty: the file in the state dir.
    url: str = ""
    lease: float = Field(30.0, ge=1)  # seconds a writer's lease on a shared server lasts unrenewed
    reconnect_wait: float = Field(30.0, ge=0)  # seconds a lost server connection is retried


# Where and how sessions are kept is the user's decision, never a repository's.
STORAGE = SettingsSection("storage", StorageSettings, workspace_safe=False)
