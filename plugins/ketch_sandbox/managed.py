"""What the managed policy's ``[sandbox]`` table means (``/etc/ketch/managed.toml``).

``required = true``: the sandbox cannot be turned off. A user or workspace config
saying ``[sandbox] enabled = false`` is refused, and where the sandbox cannot run
(no bubblewrap, no user namespaces) commands are refused instead of running
unsandboxed. The ``sandbox`` plugin itself cannot be disabled then either: list it in
the managed ``[plugins] required``.

``[sandbox.network]``: ``allow`` is an upper bound (a domain a user or workspace allows
stays allowed only if the managed list allows it too; with no list of their own, the
managed list is theirs), ``deny`` is added to everyone's. (The egress rules themselves
are the sandbox's network side; this only decides what their effective lists are.)
"""

from __future__ import annotations

from collections.abc import Callable
from fnmatch import fnmatchcase
from typing import Any

from pydantic import Field

from ketch.settings import Section, SettingsSection


class ManagedSandbox(Section):
    enabled: bool = True
    required: bool = False
    network: dict[str, Any] = Field(default_factory=dict)


def _covered(domain: str, patterns: list[str]) -> bool:
    """``domain`` (itself possibly ``*.example.com``) is inside one of ``patterns``."""
    return any(fnmatchcase(domain, p) or domain == p.removeprefix("*.") for p in patterns)


def narrow(
    effective: dict[str, Any], managed: dict[str, Any], origin: Callable[[str], str]
) -> list[str]:
    refusals: list[str] = []
    table = effective.setdefault("sandbox", {})
    if managed.get("required"):
        if table.get("enabled", True) is False:
            refusals.append(f"[sandbox] enabled = false (set by {origin('sandbox.enabled')})")
        table["enabled"] = True
        table["required"] = True
    network = managed.get("network")
    if isinstance(network, dict):
        mine = table.setdefault("network", {})
        if "allow" in network:
            bound = [str(d) for d in network.get("allow") or []]
            own = mine.get("allow")
            mine["allow"] = bound if own is None else [d for d in own if _covered(str(d), bound)]
        deny = [str(d) for d in network.get("deny") or []]
        mine["deny"] = list(mine.get("deny") or []) + [
            d for d in deny if d not in (mine.get("deny") or [])
        ]
    return refusals


MANAGED_SANDBOX = SettingsSection("sandbox", ManagedSandbox, workspace_safe=False, narrow=narrow)
