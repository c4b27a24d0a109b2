"""Commands: CLI subcommands (``ketch sessions ...``) and slash commands (``/mode``).

Kept import-light: commands are collected before the command line is parsed, so
``ketch --help`` can list them. Do heavy imports inside ``run``.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ketch.kernel import Kernel
    from ketch.session import Session


@dataclass(frozen=True)
class PromptRequest:
    """A prompt a slash command hands to the frontend to send as a turn (a Markdown
    command's expanded text). ``model``: that turn's model; ``allowed_tools`` narrows that
    turn's tools (never widens: ``Kernel.run_turn(allowed_tools=...)``); ``source`` says
    where it came from, for the user."""

    text: str
    model: str | None = None
    allowed_tools: frozenset[str] | None = None
    source: str = ""


@dataclass
class SlashContext:
    """What a slash command gets: the kernel, the live session, its argument text,
    ``print`` to show output to the user (the frontend decides how), and ``submit`` to
    send a prompt as the next turn (None where the frontend cannot).

    Frontends that can also offer: ``choose(title, options)``, which lets the person
    pick one of ``options`` (labels) and returns its index, or None when they cancel;
    and ``prefill(text)``, which puts ``text`` in the input box for the person to edit
    and send. Each is None where the frontend cannot.
    """

    kernel: Kernel
    session: Session
    argument: str
    print: Callable[[str], None]
    submit: Callable[[PromptRequest], None] | None = None
    choose: Callable[[str, list[str]], Awaitable[int | None]] | None = None
    prefill: Callable[[str], None] | None = None


@dataclass
class Command:
    """One command.

    For a CLI subcommand set ``cli=True``: ``configure(parser)`` adds its arguments
    (subcommands of its own included) and ``run(kernel, args) -> int`` runs it and
    returns the exit code. With ``parent`` it is a subcommand of another plugin's CLI
    command (``ketch PARENT NAME ...``, listed among the parent's own actions, which
    must be subparsers). For a slash command set ``slash=True``: ``slash_run(ctx)``
    runs it (sync or async) and returns None.
    """

    name: str
    help: str
    cli: bool = False
    slash: bool = False
    configure: Callable[[argparse.ArgumentParser], None] | None = None
    run: Callable[[Kernel, argparse.Namespace], int] | None = None
    slash_run: Callable[[SlashContext], Awaitable[None] | None] | None = None
    plugin: str = field(default="", compare=False)
    aliases: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    parent: str = ""  # the CLI command this one is an action of ("sessions")

    @property
    def key(self) -> str:
        """The name it is registered under: ``NAME``, or ``PARENT NAME`` for a subcommand."""
        return f"{self.parent} {self.name}" if self.parent else self.name
