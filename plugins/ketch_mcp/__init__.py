"""MCP client: the tools of configured MCP servers, offered as ``mcp__SERVER__TOOL``.

Servers come from ``[mcp_servers.NAME]`` (stdio: command, args, env; streamable
HTTP: url); a workspace's own start only once the person trusted each (``ketch trust``). The MCP SDK is an optional extra (``pip install 'ketch[mcp]'``) and is
imported only when a server is configured. Other plugins add servers through the
``mcp_extra_servers`` hook this plugin declares (an installed Claude Code plugin's).
See docs/mcp.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ketch.api import Command, hookimpl, provides


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_mcp import hookspecs

    pluginmanager.add_hookspecs(hookspecs)  # mcp_transports, mcp_extra_servers


@hookimpl
def mcp_transports() -> list[str]:
    """stdio always; streamable HTTP when the MCP SDK is installed."""
    import importlib.util

    try:
        http = importlib.util.find_spec("mcp") is not None
    except (ImportError, ValueError):
        http = False
    return ["stdio", "http"] if http else ["stdio"]


@hookimpl(optionalhook=True)
def trust_setting_items(kernel: Any, key: tuple[str, ...], value: Any) -> list[Any] | None:
    if key != ("mcp_servers",):
        return None
    from ketch_mcp.trust import setting_items

    return setting_items(kernel, value)


@hookimpl(optionalhook=True)
def trust_items(kernel: Any) -> list[Any]:
    from ketch_mcp.trust import dot_mcp_items

    return dot_mcp_items(kernel)


@hookimpl(optionalhook=True)
def claude_plugins_removed(kernel: Any, plugin: str, servers: list[str]) -> None:
    """An uninstalled Claude Code plugin's servers are gone for good: so are the pinned
    definitions of their tools, in every workspace."""
    if not servers:
        return
    from ketch.api import state_dir
    from ketch_mcp.pins import PINS_FILE, PinStore
    from ketch_mcp.tools import ketch_name

    prefixes = tuple(ketch_name(server, "") for server in servers)
    PinStore(state_dir() / PINS_FILE, kernel.workspace).forget(prefixes)


@hookimpl
def ketch_register_settings(register: Callable[[Any], None]) -> None:
    from ketch_mcp.settings import MCP_SERVERS

    register(MCP_SERVERS)


@hookimpl
@provides(dynamic="the tools of the configured MCP servers: ketch mcp lists them")
def ketch_register_tools(register: Callable[[Any], None], kernel: Any) -> None:
    from ketch_mcp.settings import McpServers, extra_servers

    extra = extra_servers(kernel)
    if not kernel.settings.of(McpServers) and not extra:
        return
    from ketch_mcp.setup import register_tools

    register_tools(kernel, register, extra)


def _slash(ctx: Any) -> None:
    from ketch_mcp.commands import slash

    slash(ctx)


def _configure(parser: Any) -> None:
    from ketch_mcp.commands import configure

    configure(parser)


def _cli(kernel: Any, args: Any) -> int:
    from ketch_mcp.commands import cli

    return cli(kernel, args)


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    register(
        Command(
            name="mcp",
            help="MCP servers and their tools; approve a tool whose definition changed",
            cli=True,
            slash=True,
            configure=_configure,
            run=_cli,
            slash_run=_slash,
        )
    )
