"""The hooks the MCP plugin declares: which MCP transports this process can run, and
servers from elsewhere than the config files.

Call it (``kernel.hooks.values("mcp_transports")``) instead of looking the MCP plugin
up by name: with the plugin disabled the hook is not declared and answers nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch.api import hookspec, returns

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel


@hookspec
@returns(list, tuple, frozenset, set)
def mcp_transports() -> list[str] | None:
    """The MCP transports servers can be started over here (``stdio``, ``http``), e.g.
    for a frontend that tells its client which servers it may pass (ACP's
    ``mcpCapabilities``). Return them, or None. Called when such a frontend starts."""


@hookspec
@returns(dict)
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
