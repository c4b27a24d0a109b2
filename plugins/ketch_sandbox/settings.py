"""The sandbox's ``[sandbox]`` table: whether it is on, and its network's domain rules."""

from __future__ import annotations

from pydantic import Field

from ketch.settings import Section, SettingsSection
from ketch_net_kit.config import NetworkSettings


class SandboxSettings(Section):
    enabled: bool = True
    network: NetworkSettings = Field(default_factory=NetworkSettings)


# A workspace may write [sandbox.network]: the rules only narrow what the user's own
# config allows (ketch_net_kit.config.compose), and its inject table is never read.
SANDBOX = SettingsSection(
    "sandbox",
    SandboxSettings,
    workspace_safe={"network": True},
    doc="The bubblewrap sandbox: enabled, and [sandbox.network] domain rules (docs/sandbox.md).",
)
