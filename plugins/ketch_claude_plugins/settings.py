"""The typed ``[claude_plugins]`` table (see :mod:`ketch_claude_plugins.workspace`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ketch.api import SettingsSection


class ClaudePluginsSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: list[str] = Field(default_factory=list)
    disabled: list[str] = Field(default_factory=list)


SECTION = SettingsSection(
    "claude_plugins",
    ClaudePluginsSettings,
    workspace_safe=frozenset({"disabled"}),
    doc="Claude Code plugins turned on (enabled) or off (disabled) here, as NAME@MARKETPLACE",
)
