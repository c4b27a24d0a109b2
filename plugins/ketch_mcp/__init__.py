"""MCP client: the tools of configured MCP servers, offered as ``mcp__SERVER__TOOL``.

Servers come from ``[mcp_servers.NAME]`` (stdio: command, args, env; streamable
HTTP: url); a workspace's own start only once the person trusted each (``ketch trust``). The MCP SDK is an optional extra (``pip install 'ketch[mcp]'``) and is
imported only when a server is configured. See docs/mcp.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ketch import hookimpl
from ketch.commands import Command
from ketch.plugins import provides


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


@hookimpl
def ketch_register_settings(register: Callable[[Any], None]) -> None:
    from ketch_mcp.settings import MCP_SERVERS

    register(MCP_SERVERS)


@hookimpl
@provides(dynamic="the tools of the configured MCP servers: ketch mcp lists them")
def ketch_register_tools(register: Callable[[Any], None], kernel: Any) -> None:
    from ketch_mcp.settings import McpServers

    if not kernel.settings.of(McpServers):
        return
    from ketch_mcp.setup import register_tools

    register_tools(kernel, register)


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
