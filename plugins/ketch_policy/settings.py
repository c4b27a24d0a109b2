"""The policy plugin's ``[permissions]`` table."""

from __future__ import annotations

from pydantic import Field

from ketch.settings import Section, SettingsSection


class PermissionsSettings(Section):
    """``[permissions]``: rules of the form TOOL or TOOL(scope)."""

    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


# A repository may only make ketch stricter before it is trusted.
PERMISSIONS = SettingsSection(
    "permissions", PermissionsSettings, workspace_safe=frozenset({"ask", "deny"})
)
