"""The workspace's MCP servers as trust items: each ``[mcp_servers.NAME]`` of its
``.ketch/config.toml`` is one (its whole table: command line, environment, URL,
headers, and the workspace files the command runs), and so is each server of a
``.mcp.json`` (shown; ketch does not start those). A workspace server starts only while
its item is pinned."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ketch.kernel import Kernel
    from ketch_trust_kit import TrustItem

SOURCE = ".ketch/config.toml"


def shows(table: dict[str, Any]) -> str:
    """What starts, as the person reviews it: the command line or URL, and the rest."""
    parts = []
    if table.get("command"):
        args = table.get("args")
        listed = [str(a) for a in args] if isinstance(args, list) else []
        parts.append(" ".join([str(table["command"]), *listed]))
    if table.get("url"):
        parts.append(f"url {table['url']}")
    env = table.get("env")
    if isinstance(env, dict) and env:
        parts.append("env " + " ".join(f"{k}={v}" for k, v in env.items()))
    headers = table.get("headers")
    if isinstance(headers, dict) and headers:
        parts.append("headers " + ", ".join(str(k) for k in headers))
    rest = {k: v for k, v in table.items() if k not in ("command", "args", "url", "env", "headers")}
    if rest:
        parts.append(json.dumps(rest, sort_keys=True, default=str))
    return "; ".join(parts) or json.dumps(table, sort_keys=True, default=str)


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
