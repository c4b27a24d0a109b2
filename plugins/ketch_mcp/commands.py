"""``/mcp`` and ``ketch mcp``: list servers and tools, approve a changed tool.

Import-light: ``configure`` runs whenever the command line is built (``ketch --help``).
"""

from __future__ import annotations

import argparse
from typing import Any

USAGE = "usage: /mcp (list servers and tools) | /mcp approve TOOL (accept a changed tool)"


def report(kernel: Any) -> list[str]:
    from ketch_mcp.setup import state_of
    from ketch_mcp.tools import ketch_name

    state = state_of(kernel)
    from ketch_mcp.settings import McpServers

    servers = kernel.settings.of(McpServers)
    if not servers:
        return [
            "no MCP servers configured ([mcp_servers.NAME] in config.toml; a workspace's own config counts only once trusted)"
        ]
    lines: list[str] = []
    runtime = state.runtime
    for name, config in servers.items():
        where = (
            f"http {config.url}"
            if config.url
            else f"stdio {config.command} {' '.join(config.args)}".rstrip()
        )
        if runtime is None:
            lines.append(f"{name}: {where} (not started)")
            continue
        server = runtime.servers[name]
        status = (
            "running" if server.session is not None else f"not running: {server.error or 'stopped'}"
        )
        lines.append(f"{name}: {where} ({status})")
        for tool in server.tools:
            ketch = ketch_name(name, tool.name)
            mark = (
                "waiting for approval"
                if ketch in state.held
                else ("offered" if ketch in state.offered else "not offered")
            )
            lines.append(f"  {ketch}  [{mark}]")
    for name, tool in state.held.items():
        lines.append(f"changed: {name}; its new description (approve with /mcp approve {name}):")
        lines.extend(f"    {line}" for line in (tool.description or "(none)").splitlines())
    if runtime is None:
        for name, entry in state.pins.entries().items():
            if isinstance(entry, dict) and entry.get("pending"):
                lines.append(f"changed: {name} (waiting for approval: ketch mcp approve {name})")
    return lines


def slash(ctx: Any) -> None:
    words = ctx.argument.split()
    if not words or words[0] in ("list", "ls"):
        for line in report(ctx.kernel):
            ctx.print(line)
        return
    if words[0] == "approve" and len(words) == 2:
        from ketch_mcp.setup import state_of

        ctx.print(state_of(ctx.kernel).approve(words[1]))
        return
    ctx.print(USAGE)


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="mcp_command", metavar="ACTION")
    sub.add_parser(
        "list", help="configured servers and tools waiting for approval (starts nothing)"
    )
    approve = sub.add_parser("approve", help="accept a tool's changed description or schema")
    approve.add_argument("tool", help="the tool's ketch name, mcp__SERVER__TOOL")


def cli(kernel: Any, args: argparse.Namespace) -> int:
    if getattr(args, "mcp_command", None) == "approve":
        from ketch_mcp.setup import state_of

        message = state_of(kernel).approve(args.tool)
        print(message)
        return 0 if message.startswith("approved") else 1
    for line in report(kernel):
        print(line)
    return 0
