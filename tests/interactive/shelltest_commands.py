"""Slash commands for the shell tests: an async ``/ping`` and a ``/trust`` that records
it ran (a stand-in for the policy plugin's). ``SHELLTEST_NO_TRUST=1`` leaves /trust out."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from ketch import hookimpl
from ketch.commands import Command, SlashContext


async def _ping(ctx: SlashContext) -> None:
    await asyncio.sleep(0)
    ctx.print(f"pong: {ctx.argument or '(nothing)'}")


def _trust(ctx: SlashContext) -> None:
    Path(ctx.session.workspace, "trusted-by-command").write_text(ctx.argument or "-")
    ctx.session.trusted_workspace = True
    ctx.print("workspace trusted (test command)")


def _boom(ctx: SlashContext) -> None:
    raise RuntimeError("kaboom")


@hookimpl
def ketch_register_commands(register: Any) -> None:
    register(Command(name="ping", help="answer pong", slash=True, slash_run=_ping))
    register(Command(name="boom", help="always fails", slash=True, slash_run=_boom))
    if os.environ.get("SHELLTEST_NO_TRUST") != "1":
        register(
            Command(name="trust", help="trust this workspace (test)", slash=True, slash_run=_trust)
        )
