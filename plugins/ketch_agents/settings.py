"""The ``[agents]`` table."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ketch.api import SettingsSection


class AgentsSettings(BaseModel):
    model_config = ConfigDict(extra="allow")

    # Subagents of one session running at once (the rest wait their turn).
    max_concurrent: int = Field(4, ge=1, le=64)
    # Steps (model requests) one subagent may take for its task.
    max_iterations: int = Field(50, ge=1, le=10_000)
    # Names a definition's ``model`` may use for a model of the parent's provider
    # (``haiku = "claude-haiku-4-5"``); an unmapped Claude Code alias means the parent's model.
    models: dict[str, str] = Field(default_factory=dict)


# Limits cannot raise authority: a repository may set them. Models are the user's to map.
AGENTS = SettingsSection(
    "agents", AgentsSettings, workspace_safe=frozenset({"max_concurrent", "max_iterations"})
)
