"""Wiring: from ``[mcp_servers]`` to registered tools, once per kernel.

Servers start only when a turn may need them: not for CLI subcommands such as
``ketch plugins`` (which then says how many are configured) or ``ketch sessions``.
A tool whose definition changed since it was pinned is held back, not registered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ketch.api import StashKey
from ketch_mcp.options import McpOptions
from ketch_mcp.pins import PINS_FILE, PinStore, definition_hash, keyed_name
from ketch_mcp.runtime import McpRuntime
from ketch_mcp.settings import McpServers
from ketch_mcp.tools import McpTool

PLUGIN_MODULE = "ketch_mcp"


@dataclass
class McpState:
    """What the plugin knows about one kernel's MCP servers."""

    kernel: Any
    pins: PinStore
    runtime: McpRuntime | None = None
    offered: dict[str, McpTool] = field(default_factory=dict)
    held: dict[str, McpTool] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)

    def approve(self, name: str) -> str:
        """Accept a held tool's new definition; offer it from the next step on."""
        tool = self.held.pop(name, None)
        if tool is not None:
            self.pins.approve(name, definition_hash(tool.raw_description, tool.raw_schema))
            tools = self.kernel.tools
            if name not in tools:
                tool.plugin = plugin_name(self.kernel)
                tools[name] = tool
            self.offered[name] = tool
            return f"approved {name}; it is offered from the next step on"
        if self.pins.approve(name):
            return f"approved the changed definition of {name}; it is offered the next time ketch starts"
        return f"nothing to approve for '{name}' (/mcp lists the tools waiting for approval)"


STATE = StashKey[McpState]()  # in kernel.stash: this kernel's servers, pins and held tools


def state_of(kernel: Any) -> McpState:
    state = kernel.stash.get(STATE)
    if state is None:
        from ketch.api import state_dir

        state = McpState(
            kernel=kernel,
            pins=PinStore(state_dir() / PINS_FILE, kernel.workspace, keyed_name(kernel)),
        )
        kernel.stash[STATE] = state
    return state


def plugin_name(kernel: Any) -> str:
    for name, info in kernel.pm.infos.items():
        if info.module == PLUGIN_MODULE:
            return str(name)
    return "mcp"


def sdk_installed() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("mcp") is not None
    except (ImportError, ValueError):  # a blocked module (sys.modules["mcp"] = None)
        return False


def register_tools(
    kernel: Any, register: Callable[[Any], None], extra: dict[str, Any] | None = None
) -> None:
    """Start the configured servers (a workspace's only while trusted) and those other
    plugins added (``extra``, already checked by them), and register their tools."""
    from ketch_mcp.trust import allowed

    servers = kernel.settings.of(McpServers)
    tables = {name: server.model_dump() for name, server in servers.items()}
    servers = McpServers(
        {
            **{n: s for n, s in servers.items() if allowed(kernel, n, tables[n])},
            **(extra or {}),
        }
    )
    if not servers:
        return
    state = state_of(kernel)
    count = f"{len(servers)} MCP server{'s' if len(servers) != 1 else ''}"
    command = getattr(kernel.args, "_command", None)
    if command is not None:
        info = kernel.pm.infos.get(plugin_name(kernel))
        if info is not None:
            info.warnings.append(f"{count} configured (not started): {', '.join(sorted(servers))}")
        return
    if not sdk_installed():
        kernel.notices.append(
            f"{count} configured, but the MCP SDK is not installed: pip install 'ketch[mcp]'; running without MCP tools"
        )
        return
    options, problems = McpOptions.from_section(kernel.settings.section("mcp"))
    kernel.notices.extend(problems)
    runtime = McpRuntime(
        dict(servers), workspace=kernel.workspace, environ=dict(kernel.environ), options=options
    )
    state.runtime = runtime
    kernel.notices.extend(runtime.start())
    seen: set[str] = set()
    for server in runtime.servers.values():
        for remote in server.tools:
            tool = McpTool(
                runtime, server.name, remote, timeout=options.timeout, max_output=options.max_output
            )
            if tool.name in seen:
                kernel.notices.append(
                    f"MCP tool '{remote.name}' of server '{server.name}' has the same ketch name as another ({tool.name}); skipped"
                )
                continue
            seen.add(tool.name)
            verdict = state.pins.check(
                tool.name, definition_hash(tool.raw_description, tool.raw_schema)
            )
            if verdict == "changed":
                state.held[tool.name] = tool
                kernel.notices.append(
                    f"MCP tool {tool.name} changed its description or input schema since you approved it; "
                    f"it is not offered until you review it (/mcp) and accept it (/mcp approve {tool.name})"
                )
                continue
            state.offered[tool.name] = tool
            register(tool)
