"""The hook the MCP plugin declares: which MCP transports this process can run.

Call it (``kernel.hooks.values("mcp_transports")``) instead of looking the MCP plugin
up by name: with the plugin disabled the hook is not declared and answers nothing."""

from __future__ import annotations

from ketch.api import hookspec, returns


@hookspec
@returns(list, tuple, frozenset, set)
def mcp_transports() -> list[str] | None:
    """The MCP transports servers can be started over here (``stdio``, ``http``), e.g.
    for a frontend that tells its client which servers it may pass (ACP's
    ``mcpCapabilities``). Return them, or None. Called when such a frontend starts."""
