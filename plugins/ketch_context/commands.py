"""Slash commands ``/context`` and ``/memory``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch_context import memory
from ketch_context.builder import cache_for, reread_instructions

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import SlashContext

MEMORY_USAGE = "usage: /memory (show the notes) · /memory add TEXT · /memory forget N"


def slash_context(ctx: SlashContext) -> None:
    from ketch_context.report import report

    ctx.print(report(ctx.session))


def slash_memory(ctx: SlashContext) -> None:
    session = ctx.session
    settings = cache_for(session).settings
    path = memory.memory_path(session.workspace, settings.memory_file)
    verb, _, rest = ctx.argument.strip().partition(" ")
    try:
        if verb in ("", "show", "list"):
            notes = memory.entries(path)
            if not notes:
                ctx.print(f"the project memory is empty ({path}). Add a note with /memory add TEXT")
                return
            ctx.print(
                f"project memory ({path}):\n"
                + "\n".join(f"  {i}. {note}" for i, note in enumerate(notes, 1))
            )
        elif verb == "add":
            number = memory.append(path, rest, by="user")
            reread_instructions(session)
            ctx.print(f"saved as note {number} in {path}")
        elif verb in ("forget", "remove", "rm"):
            if not rest.strip().isdigit():
                ctx.print(MEMORY_USAGE)
                return
            text = memory.forget(path, int(rest))
            reread_instructions(session)
            ctx.print(f"forgot note {rest.strip()}: {text}")
        else:
            ctx.print(MEMORY_USAGE)
    except memory.NoteRefused as exc:
        ctx.print(f"not saved: {exc}")
    except OSError as exc:
        ctx.print(f"cannot change {path}: {exc.strerror or exc}")
