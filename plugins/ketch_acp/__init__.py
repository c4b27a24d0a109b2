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
from typing import TYPE_CHECKING

from ketch import hookimpl
from ketch.commands import Command
from ketch.frontends import Frontend
from ketch.plugins import provides

if TYPE_CHECKING:  # pragma: no cover
    from ketch.kernel import Kernel


def _run(kernel: Kernel) -> int:
    from ketch_acp.server import run_acp

    return run_acp(kernel)


def _run_command(kernel: Kernel, args: argparse.Namespace) -> int:
    return _run(kernel)


@hookimpl
@provides("acp")
def ketch_register_frontends(register: Callable[[Frontend], None]) -> None:
    register(
        Frontend(name="acp", run=_run, help="an Agent Client Protocol agent on stdio (for editors)")
    )


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    register(
        Command(
            name="acp",
            help="serve the Agent Client Protocol on stdin/stdout (for editors such as Zed)",
            cli=True,
            run=_run_command,
        )
    )
