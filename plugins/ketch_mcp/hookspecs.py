"""The hook the MCP plugin declares (``ketch_add_hookspecs``): servers from elsewhere
than the config files."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch import hookspec

if TYPE_CHECKING:  # pragma: no cover
    from ketch.kernel import Kernel


@hookspec
def mcp_extra_servers(kernel: Kernel) -> dict[str, dict[str, Any]] | None:
    """More MCP servers: an installed Claude Code plugin's (``.mcp.json`` or its
    manifest's ``mcpServers``).

    Called once per kernel, right before the servers start (never for CLI subcommands,
    which start none). Return ``{name: table}``, each table as ``[mcp_servers.NAME]``
    takes (``command``, ``args``, ``env`` or ``url``, ``headers``), with only the
    servers that may start *now*: the implementer checks its own pins at this call. A
    name a config file already has is left out (said once). None or {} when there are
    none. All results are collected.
    """
