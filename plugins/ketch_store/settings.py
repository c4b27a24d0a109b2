"""The ``[storage]`` table."""

from __future__ import annotations

from typing import Literal

from ketch.settings import Section, SettingsSection


class StorageSettings(Section):
    encryption: Literal["on", "off"] = "on"


# Where and how sessions are kept is the user's decision, never a repository's.
STORAGE = SettingsSection("storage", StorageSettings, workspace_safe=False)
