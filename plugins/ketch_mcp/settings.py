"""The ``[mcp_servers.NAME]`` tables: stdio (command, args, env) or streamable HTTP (url)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, RootModel

from ketch.settings import SettingsSection


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
