"""The ``[hooks]`` table: ``[[hooks.EVENT]]`` entries, each a matcher and a command."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, RootModel

from ketch.settings import SettingsSection


class HookCommand(BaseModel):
    model_config = ConfigDict(extra="allow")

    matcher: str = "*"
    command: str
    timeout: float = Field(30.0, gt=0)


class HooksSettings(RootModel[dict[str, list[HookCommand]]]):
    root: dict[str, list[HookCommand]] = Field(default_factory=dict)

    def get(self, event: str) -> list[HookCommand]:
        return self.root.get(event, [])

    def __bool__(self) -> bool:
        return bool(self.root)

    def __eq__(self, other: object) -> bool:
        return self.root == other if isinstance(other, dict) else super().__eq__(other)


# Hooks run commands: a repository can add none until the workspace is trusted.
HOOKS = SettingsSection("hooks", HooksSettings, workspace_safe=False)
