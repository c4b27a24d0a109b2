"""ketch_acp: ``ketch acp``, an Agent Client Protocol (v1) agent on stdin/stdout.

Editors (Zed, JetBrains, Neovim plugins, ...) start ``ketch acp`` and talk JSON-RPC
to it: sessions in the editor's folder, the answer streamed into the editor's agent
panel, every approval asked through the editor's own dialog, file reads and edits
through the editor's buffers when it offers them. Built on the official
``agent-client-protocol`` SDK, imported only when ``ketch acp`` runs. See docs/acp.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import Command, Frontend, StashKey, hookimpl, provides

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel


# The editor's MCP servers a session's kernel may start (``ketch_acp.booting`` puts
# them there; ``mcp_extra_servers`` below hands them to the MCP plugin).
EDITOR_SERVERS: StashKey[dict[str, dict[str, Any]]] = StashKey()


def _run(kernel: Kernel) -> int:
    from ketch_acp.server import run_acp

    return run_acp(kernel)


def _run_command(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch.api import UsageError

    # Options after ``acp`` land in the same namespace as before it; the names they
    # take are checked here, where the kernel knows its modes and profiles.
    kernel.check_mode(getattr(args, "mode", None), "--mode")
    kernel.check_profile(getattr(args, "profile", None), "--profile")
    iterations = getattr(args, "max_iterations", None)
    if iterations is not None and iterations < 1:
        raise UsageError("--max-iterations must be at least 1")
    return _run(kernel)


def _configure(parser: argparse.ArgumentParser) -> None:
    """The session options also work after ``acp`` (``ketch acp --profile assisted``),
    as the main ones do before it; unset, they leave the main ones alone."""
    keep = argparse.SUPPRESS
    parser.add_argument("--mode", default=keep, help="the mode sessions start in")
    parser.add_argument("--profile", default=keep, help="what runs without asking")
    parser.add_argument(
        "--max-iterations",
        type=int,
        metavar="N",
        default=keep,
        help="stop a turn after N model calls",
    )
    parser.add_argument(
        "--no-save", action="store_true", default=keep, help="save nothing of these sessions"
    )


@hookimpl
@provides("acp")
def ketch_register_frontends(register: Callable[[Frontend], None]) -> None:
    register(
        Frontend(name="acp", run=_run, help="an Agent Client Protocol agent on stdio (for editors)")
    )


@hookimpl(optionalhook=True)
def mcp_extra_servers(kernel: Kernel) -> dict[str, dict[str, Any]]:
    """The editor's MCP servers for this session's kernel, those the person trusted
    (the MCP plugin's hook; ``ketch_acp.booting``)."""
    servers = kernel.stash.get(EDITOR_SERVERS)
    return dict(servers) if servers else {}


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    register(
        Command(
            name="acp",
            help="serve the Agent Client Protocol on stdin/stdout (for editors such as Zed)",
            cli=True,
            configure=_configure,
            run=_run_command,
        )
    )
