"""The sandbox's ``[sandbox]`` table: whether it is on, and its network's domain rules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field

from ketch.api import Section, SettingsSection
from ketch_net_kit.config import NetworkSettings


class SandboxSettings(Section):
    enabled: bool = True
    network: NetworkSettings = Field(default_factory=NetworkSettings)
    # Only the managed policy (/etc/ketch/managed.toml) sets this: the sandbox cannot be
    # turned off, and a program that would run outside it is denied (docs/managed.md).
    required: bool = False
    # More host directories commands may read (absolute paths; user config only): a
    # toolchain or a library the sandbox does not find by itself.
    read_only: list[str] = Field(default_factory=list)


def narrow(
    effective: dict[str, Any], managed: dict[str, Any], origin: Callable[[str], str]
) -> list[str]:
    """The managed ``[sandbox]``: ``required = true`` keeps it on (a config turning it off
    is refused, naming who asked). Its ``[sandbox.network]`` is applied where the domain
    rules are composed from the layers (``ketch_net_kit.config.compose``: the managed
    ``allow``/``local`` bound everyone's, its ``deny``/``read_only`` add)."""
    refusals: list[str] = []
    table = effective.setdefault("sandbox", {})
    if managed.get("required"):
        if table.get("enabled", True) is False:
            refusals.append(f"[sandbox] enabled = false (set by {origin('sandbox.enabled')})")
        table["enabled"] = True
        table["required"] = True
    return refusals


# A workspace may write [sandbox.network]: the rules only narrow what the user's own
# config allows (ketch_net_kit.config.compose), and its inject table is never read.
SANDBOX = SettingsSection(
    "sandbox",
    SandboxSettings,
    workspace_safe={"network": True},
    doc="The bubblewrap sandbox: enabled, and [sandbox.network] domain rules (docs/sandbox.md).",
    narrow=narrow,
)
