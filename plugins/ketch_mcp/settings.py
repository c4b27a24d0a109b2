"""The ``[mcp_servers.NAME]`` tables: stdio (command, args, env) or streamable HTTP (url)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError

from ketch.api import SettingsSection


class McpServer(BaseModel):
    model_config = ConfigDict(extra="allow")

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None


class McpServers(RootModel[dict[str, McpServer]]):
    root: dict[str, McpServer] = Field(default_factory=dict)

    def items(self):  # type: ignore[no-untyped-def]
        return self.root.items()

    def keys(self):  # type: ignore[no-untyped-def]
        return self.root.keys()

    def values(self):  # type: ignore[no-untyped-def]
        return self.root.values()

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.root)

    def __len__(self) -> int:
        return len(self.root)

    def __bool__(self) -> bool:
        return bool(self.root)

    def __getitem__(self, name: str) -> McpServer:
        return self.root[name]

    def get(self, name: str) -> McpServer | None:
        return self.root.get(name)

    def __eq__(self, other: object) -> bool:
        return self.root == other if isinstance(other, dict) else super().__eq__(other)


# A server is code that runs: a repository's start one by one, as the person trusts them.
MCP_SERVERS = SettingsSection("mcp_servers", McpServers, workspace_safe=False)


def extra_servers(kernel: Any) -> dict[str, McpServer]:
    """The servers other plugins add (``mcp_extra_servers``: an installed Claude Code
    plugin's, only those that may start now); none for a CLI subcommand (it starts no
    server). A name the config already has, or a table that is not a server, is said
    and left out."""
    if kernel is None or getattr(getattr(kernel, "args", None), "_command", None) is not None:
        return {}
    configured = kernel.settings.of(McpServers)
    found: dict[str, McpServer] = {}
    for plugin, servers in kernel.hooks.call("mcp_extra_servers", kernel=kernel):
        for name, table in servers.items():
            if name in configured or name in found:
                kernel.notices.append(
                    f"MCP server {name} of plugin {plugin}: a server of that name is already configured; not started"
                )
                continue
            try:
                found[str(name)] = McpServer.model_validate(table)
            except ValidationError as exc:
                kernel.pm.record_failure(plugin, "mcp_extra_servers", exc, closed=False)
    return found
