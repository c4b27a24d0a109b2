"""ketch_repeats: the same call, with the same input, again and again is refused.

A model stuck in a loop proposes one call over and over; its result will not change.
Before the votes, the kernel asks ``ketch_refuse_call``; this plugin answers
(``streak.py``): the ``[loop] duplicate_call_limit``-th identical call in a row within a
turn (3 by default) is refused with a note telling the model to use the earlier result,
unless the tool declares itself ``repeatable``. Without it (``--no-plugin repeats``)
identical calls go to the votes like any other. See docs/tools.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch.api import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session, Stash, Tool, ToolCallPart


@hookimpl
def ketch_refuse_call(session: Session, call: ToolCallPart, tool: Tool, turn: Stash) -> str | None:
    from ketch_repeats.streak import refusal

    return refusal(call, tool, turn, session.kernel.settings.loop.duplicate_call_limit)
