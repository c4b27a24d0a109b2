"""One kernel per ACP session: the client's ``cwd`` is that session's workspace.

A workspace decides a lot (its ``.ketch/config.toml``, whether it is trusted, the
MCP servers and their tools), and a kernel holds exactly one. So each session gets a
kernel booted as the command line boots one, in the client's folder, with the same
options and plugin choices as ``ketch acp`` itself.

The client's MCP servers are handed to ketch's MCP plugin through the hook it
declares for servers from elsewhere than the config files (``mcp_extra_servers``,
answered from the session kernel's stash) and start like any configured server,
description pins included; a name the config already has keeps the configured server. An editor also passes servers
from the project's own settings, so each starts only once the person trusted it for
this workspace: an untrusted one is remembered (``ketch trust`` shows it, with its
command line) and not started.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.api import KetchError
from ketch_acp import EDITOR_SERVERS

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel
    from ketch_trust_kit import TrustItem


def session_args(base: argparse.Namespace) -> argparse.Namespace:
    """The options ``ketch acp`` was started with, as if it were a frontend run (the MCP
    plugin starts no server for a subcommand)."""
    args = copy.copy(base)
    for name in ("_command", "command"):
        if hasattr(args, name):
            delattr(args, name)
    return args


def mcp_settings(servers: list[Any]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """ACP ``mcpServers`` as ``[mcp_servers]`` tables, and a note for each one skipped."""
    tables: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for server in servers or []:
        name = str(getattr(server, "name", "") or "").strip()
        if not name:
            notes.append("an MCP server from the editor has no name; skipped")
            continue
        kind = type(server).__name__
        if hasattr(server, "command"):
            env = {item.name: item.value for item in getattr(server, "env", None) or []}
            tables[name] = {"command": server.command, "args": list(server.args or []), "env": env}
        elif kind.startswith("Http") or kind == "McpServerHttp":
            headers = {item.name: item.value for item in getattr(server, "headers", None) or []}
            tables[name] = {"url": server.url, "headers": headers}
        else:
            notes.append(
                f"MCP server '{name}' from the editor uses a transport ketch does not speak ({kind}); skipped"
            )
    return tables, notes


def boot_session_kernel(base: Kernel, cwd: str, mcp_servers: list[Any]) -> tuple[Kernel, list[str]]:
    """A kernel for one session in ``cwd``, and notices about the editor's MCP servers.

    Settings are not validated yet (that happens when the session is built, in a
    worker thread, since starting MCP servers blocks)."""
    from ketch.api import Kernel, cli_settings

    workspace = Path(cwd)
    if not workspace.is_absolute():
        raise KetchError(f"cwd must be an absolute path, got {cwd!r}")
    if not workspace.is_dir():
        raise KetchError(f"cwd {cwd} is not a directory")
    args = session_args(base.args)
    kernel = Kernel.boot(
        workspace=workspace,
        cli_disabled=list(getattr(args, "no_plugin", None) or []),
        environ=dict(base.environ),
        args=args,
    )
    cli = cli_settings(args)
    tables, notes = mcp_settings(mcp_servers)
    trusted, held = editor_servers(kernel.workspace, tables)
    kernel.stash[EDITOR_SERVERS] = trusted
    if held:
        notes.append(
            f"the editor's MCP server(s) {', '.join(sorted(held))} were not started: not trusted for {kernel.workspace} "
            f"(an editor passes servers from the project's own settings too); review and trust them with `ketch trust {kernel.workspace}`"
        )
    kernel.set_command_line_settings(cli)
    return kernel, notes


EDITOR = "the editor (ACP)"


def editor_items(workspace: Path, tables: dict[str, dict[str, Any]]) -> dict[str, TrustItem]:
    """The editor's servers as trust items (their whole tables, and the workspace files
    their command lines run); shown without environment values."""
    from ketch_trust_kit import canonical, make_item

    items = {}
    for name, table in tables.items():
        env = table.get("env") or {}
        command = table.get("command")
        line = " ".join(
            [str(command or table.get("url") or ""), *map(str, table.get("args") or [])]
        )
        items[name] = make_item(
            "MCP server",
            name,
            EDITOR,
            {"table": canonical(table)},
            line + (f"; env {' '.join(f'{k}=…' for k in env)}" if env else ""),
            workspace=workspace,
            command=[str(command), *map(str, table.get("args") or [])] if command else None,
            note="passed by the editor for this folder",
        )
    return items


def editor_servers(
    workspace: Path, tables: dict[str, dict[str, Any]]
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The editor's servers the person trusted for this workspace, and the names of the
    others (remembered, without their environment values, for ``ketch trust``)."""
    if not tables:
        return {}, []
    from ketch_trust_kit import PinStore, TrustStoreError

    store = PinStore()
    trusted: dict[str, dict[str, Any]] = {}
    held = []
    for name, item in editor_items(workspace, tables).items():
        if store.is_pinned(workspace, item):
            trusted[name] = tables[name]
            continue
        held.append(name)
        with contextlib.suppress(TrustStoreError, OSError):
            store.offer(workspace, [item])
    return trusted, held
