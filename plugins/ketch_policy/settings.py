"""The policy plugin's ``[permissions]`` table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field

from ketch.api import Section, SettingsSection


class PermissionsSettings(Section):
    """``[permissions]``: rules of the form TOOL or TOOL(scope)."""

    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    # Only meaningful in the managed policy (/etc/ketch/managed.toml): profiles no one may use.
    forbidden_profiles: list[str] = Field(default_factory=list)


def narrow(
    effective: dict[str, Any], managed: dict[str, Any], origin: Callable[[str], str]
) -> list[str]:
    """The managed ``[permissions]``: forbidden profiles are refused wherever they were
    asked for (``--profile``, ``KETCH_PROFILE``, a user or workspace config); its ``deny``
    and ``ask`` rules are added to everyone's and cannot be removed (deny beats allow, so
    no allow rule of a user or workspace can reach past them)."""
    refusals: list[str] = []
    forbidden = [str(p) for p in managed.get("forbidden_profiles") or []]
    profile = effective.get("profile")
    if profile in forbidden:
        refusals.append(f"profile '{profile}' (asked for by {origin('profile')})")
    table = effective.setdefault("permissions", {})
    for kind in ("deny", "ask"):
        rules = [str(r) for r in managed.get(kind) or []]
        mine = list(table.get(kind) or [])
        table[kind] = mine + [r for r in rules if r not in mine]
    table["forbidden_profiles"] = forbidden
    return refusals


# A repository may only make ketch stricter before it is trusted.
PERMISSIONS = SettingsSection(
    "permissions", PermissionsSettings, workspace_safe=frozenset({"ask", "deny"}), narrow=narrow
)
