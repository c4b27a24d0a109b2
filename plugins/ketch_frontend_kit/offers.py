"""A command a frontend may run when it starts: a capability the command declares.

A plugin whose slash command has something to offer before the first prompt (the
trust plugin's review of what a workspace would run) says so in its ``Command.extra``:
``{START_OFFER: ["--offer"]}``, the arguments to run it with. A frontend looks for
that capability, never for a plugin's or a command's name; with no such command it
offers nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ketch_frontend_kit import START_OFFER


def start_offers(commands: Iterable[Any]) -> list[tuple[Any, list[str]]]:
    """(command, its arguments) for each slash command that declares a start offer."""
    found = []
    for command in commands:
        args = command.extra.get(START_OFFER)
        if command.slash and command.slash_run is not None and args is not None:
            found.append((command, [str(a) for a in args]))
    return sorted(found, key=lambda pair: pair[0].name)
