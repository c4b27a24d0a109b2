"""Slash commands for the shell tests: an async ``/ping`` and a ``/boom`` that fails."""

from __future__ import annotations

import asyncio
from typing import Any

from ketch import hookimpl
from ketch.commands import Command, SlashContext


async def _ping(ctx: SlashContext) -> None:
    await asyncio.sleep(0)
    ctx.print(f"pong: {ctx.argument or '(nothing)'}")


def _boom(ctx: SlashContext) -> None:
    raise RuntimeError("kaboom")


@hookimpl
def ketch_register_commands(register: Any) -> None:
    register(Command(name="ping", help="answer pong", slash=True, slash_run=_ping))
    register(Command(name="boom", help="always fails", slash=True, slash_run=_boom))
