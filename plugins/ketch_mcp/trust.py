"""The workspace's MCP servers as trust items: each ``[mcp_servers.NAME]`` of its
``.ketch/config.toml`` is one (its whole table: command line, environment, URL,
headers, and the workspace files the command runs), and so is each server of a
``.mcp.json`` (shown; ketch does not start those). A workspace server starts only while
its item is pinned."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ketch_claude_kit.mcp_config import shows

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel
    from ketch_trust_kit import TrustItem

SOURCE = ".ketch/config.toml"


def server_item(
    kernel: Kernel, name: str, table: Any, *, source: str = SOURCE, note: str = ""
) -> TrustItem:
    from ketch_trust_kit import make_item

    table = table if isinstance(table, dict) else {"value": table}
    command = table.get("command")
    args = table.get("args") if isinstance(table.get("args"), list) else []
    return make_item(
        "MCP server",
        str(name),
        source,
        table,
        shows(table),
        workspace=kernel.workspace,
        command=[str(command), *map(str, args)] if command else None,
        setting=("mcp_servers", str(name)) if source == SOURCE else None,
        note=note,
    )


def setting_items(kernel: Kernel, value: Any) -> list[TrustItem]:
    if not isinstance(value, dict):
        return []
    return [server_item(kernel, name, table) for name, table in value.items()]


def dot_mcp_items(kernel: Kernel) -> list[TrustItem]:
    try:
        data = json.loads((kernel.workspace / ".mcp.json").read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return []
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return []
    return [
        server_item(
            kernel,
            name,
            table,
            source=".mcp.json",
            note="Claude Code starts it; ketch does not read .mcp.json",
        )
        for name, table in servers.items()
    ]


def allowed(kernel: Kernel, name: str, table: dict[str, Any]) -> bool:
    """Whether the server ``name`` (configured as ``table``) may start: the user's own
    always; the workspace's while pinned (checked as it starts)."""
    from ketch_trust_kit import check, workspace_config

    written = (workspace_config(kernel).get("mcp_servers") or {}).get(name)
    if not isinstance(written, dict):
        return True
    if {k: v for k, v in table.items() if v not in (None, [], {})} != {
        k: v for k, v in written.items() if v not in (None, [], {})
    }:
        return True  # another layer's table of the same name won (not the workspace's)
    return check(kernel, server_item(kernel, name, written), held="not started")
