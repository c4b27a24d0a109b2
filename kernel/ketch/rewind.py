"""Rewinding a conversation: continue from before a turn, keeping the transcript whole.

The transcript is append-only, and rewinding does not change that: it marks a turn's
prompt and every message after it *rewound* and sets the active context (what the next
request carries) back to what preceded that prompt. Turns are the kernel's usual ones
(:func:`ketch.context.prompt_numbers`: each prompt the person typed starts one).

A compaction summary in the active context is kept only when everything it replaced
came before the cut; otherwise the active context falls back to the transcript before
the cut, less what was rewound earlier (the next request compacts again if it must).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ketch.context import is_prompt
from ketch.errors import KetchError
from ketch.messages import History


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
    known: set[str] = set()
    for compaction in compactions:
        for item in compaction.get("record") or ():
            by, replaced = item.get("by"), item.get("replaced")
            if not isinstance(by, str) or not isinstance(replaced, list):
                continue
            known.add(by)
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
