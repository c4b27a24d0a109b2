"""Rewinding a conversation: continue from before a turn, keeping the transcript whole,
and this plugin's events (``changes``, ``rewind``).

The transcript is append-only, and rewinding does not change that: it marks a turn's
prompt and every message after it *rewound* (``ketch_context_kit.marks``, in
``session.state``) and sets the active context (what the next request carries) back to
what preceded that prompt. A compaction summary in the active context is kept only when
everything it replaced came before the cut; otherwise the active context falls back to
the transcript before the cut, less what was rewound earlier (the next request compacts
again if it must).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from ketch.api import Event, History, KetchError
from ketch_context_kit.turns import is_prompt

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session


class ChangesEvent(Event):
    """What the running turn has changed in the workspace so far, as checkpoints measured
    it: sent after each call that changed files, cumulative for the turn (the last one of
    a turn is its total). ``paths`` are relative to the workspace; ``revert`` names the
    command that takes them back (``/undo``), empty when nothing can."""

    type: Literal["changes"] = "changes"
    paths: list[str]
    revert: str = ""


class RewindEvent(Event):
    """The conversation was rewound: the transcript message ``message_id`` and every
    later one are marked rewound (they stay in the transcript), ``rewound`` lists them
    all, and ``active`` is the ids of the active context the conversation continues from."""

    type: Literal["rewind"] = "rewind"
    message_id: str
    rewound: list[str]
    active: list[str]


def rewind_context(
    transcript: History,
    active: History,
    compactions: Iterable[dict[str, Any]],
    rewound: Iterable[str],
    message_id: str,
) -> tuple[History, list[str]]:
    """The active context after rewinding to before prompt ``message_id``, and the ids
    this rewind marks rewound (the prompt and every later message not marked before).

    Raises :class:`KetchError` when ``message_id`` is not a prompt of the transcript, or
    was rewound already."""
    earlier = set(rewound)
    ids = [m.id for m in transcript]
    try:
        index = ids.index(message_id)
    except ValueError:
        raise KetchError(f"message {message_id} is not in this session's transcript") from None
    if not is_prompt(transcript[index]):
        raise KetchError(
            f"message {message_id} is not a prompt: a conversation rewinds to before a prompt"
        )
    if message_id in earlier:
        raise KetchError("that turn was rewound already")
    cut = [i for i in ids[index:] if i not in earlier]
    before = {i for i in ids[:index] if i not in earlier}
    # Summaries whose replaced messages all precede the cut (a summary may replace an
    # earlier summary: compactions are in order, so one pass settles it).
    fits: set[str] = set()
    for compaction in compactions:
        for item in compaction.get("record") or ():
            by, replaced = item.get("by"), item.get("replaced")
            if not isinstance(by, str) or not isinstance(replaced, list):
                continue
            if all(r in before or r in fits for r in replaced):
                fits.add(by)
    in_transcript = set(ids)
    kept = []
    for message in active:
        if message.id in in_transcript:
            if message.id in before:
                kept.append(message)
        elif message.id in fits:
            kept.append(message)
        else:  # a summary of something at or after the cut, or of unknown origin
            return tuple(m for m in transcript[:index] if m.id in before), cut
    return tuple(kept), cut


def rewind(session: Session, message_id: str) -> RewindEvent:
    """Continue a live session's conversation from before the prompt ``message_id``.

    Nothing leaves the transcript: that prompt and every later message are marked
    rewound, and the active context is set back to what preceded the prompt. Emits a
    ``rewind`` event (after the ``active`` one) and returns it. Call it between turns."""
    from ketch_context_kit.compaction import records
    from ketch_context_kit.marks import mark_rewound, rewound

    active, cut = rewind_context(
        session.transcript,
        session.active,
        records(session.state),
        rewound(session.state),
        message_id,
    )
    session.set_active(active, "rewind")
    mark_rewound(session.state, cut)
    event = RewindEvent(message_id=message_id, rewound=cut, active=[m.id for m in active])
    session.kernel.emit(session, event)
    return event
