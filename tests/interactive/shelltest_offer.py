"""A slash command that declares a start offer (``START_OFFER``) under a name of its
own: the shell runs it because of the capability, not because of a name."""

from __future__ import annotations

from typing import Any

from ketch import hookimpl
from ketch.commands import Command, SlashContext
from ketch_frontend_kit import START_OFFER


def _review(ctx: SlashContext) -> None:
    ctx.print(f"offered at start with: {ctx.argument}")


@hookimpl
def ketch_register_commands(register: Any) -> None:
    register(
        Command(
            name="review-things",
            help="offers a review at start",
            slash=True,
            slash_run=_review,
            extra={START_OFFER: ["--offer", "quietly"]},
        )
    )
