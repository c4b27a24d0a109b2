"""Slash commands: ``/compact [instructions]``, ``/pin [N|ID]`` and ``/unpin [N|ID|all]``.

Pins are per turn: ``/pin`` pins the last turn, ``/pin N`` turn N (the numbers
``/context`` shows), ``/pin ID`` the turn holding the message whose id starts with ID (at least 4
characters, with or without ``msg_``).
A pinned turn stays verbatim through every compaction. Only turns still verbatim in
the active context can be pinned.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch.api import NoticeEvent
from ketch_compact.render import clip
from ketch_compact.runner import compact
from ketch_context_kit.compaction import pinned, set_pinned
from ketch_context_kit.turns import Span, prompt_numbers, split_turns

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session, SlashContext


async def slash_compact(ctx: SlashContext) -> None:
    """Compact now. The numbers are the ``compaction`` event's (a frontend shows them);
    this says who wrote the summary (the summarizer says when it asks the model)."""
    from ketch_compact.settings import CompactorSettings
    from ketch_context_kit.request import measure

    session = ctx.session
    wanted = session.kernel.settings.of(CompactorSettings).command_compactor
    budget = measure(session)
    result = await compact(
        session,
        "command",
        system_tokens=budget.fixed,
        capacity=budget.capacity,
        instructions=ctx.argument.strip() or None,
    )
    if result is None:
        ctx.print(
            "nothing to compact: only the recent and pinned turns are left, or the older ones are smaller than a summary of them"
        )
        return
    if result.compactor == "model":
        ctx.print("the summary was written by the model (/context shows what is kept verbatim)")
    elif wanted == "model":
        ctx.print("the model's summary failed, so the older turns are listed instead (see above)")
    else:
        ctx.print(
            f'the older turns are listed, not summarized: [compaction] command_compactor = "{wanted}" '
            '("model" has the model write a summary)'
        )


MIN_ID_PREFIX = 4  # shorter prefixes match too much by chance ("9" begins many hex ids)


def id_matches(message_id: str, argument: str) -> bool:
    bare = argument.removeprefix("msg_")
    return len(bare) >= MIN_ID_PREFIX and message_id.removeprefix("msg_").startswith(bare)


def turns_of(session: Session) -> list[Span]:
    return [s for s in split_turns(session.active, prompt_numbers(session.transcript)) if s.number]


def find_turn(session: Session, argument: str) -> Span | str:
    """The turn ``argument`` names in the active context, or why there is none."""
    turns = turns_of(session)
    argument = argument.strip()
    if not turns:
        return "there is no turn to pin yet"
    if not argument:
        return turns[-1]
    total = len(prompt_numbers(session.transcript))
    if argument.isdigit() and 1 <= int(argument) <= total:
        number = int(argument)
        for span in turns:
            if span.number == number:
                return span
        return f"turn {number} was already compacted; only turns still verbatim can be pinned"
    # Otherwise a message id prefix (ids are hex, so a long all-digit prefix is an id too).
    matches = {span.start: span for span in turns for i in span.ids if id_matches(i, argument)}
    if len(matches) == 1:
        return next(iter(matches.values()))
    if len(matches) > 1:
        return f"'{argument}' matches messages in {len(matches)} turns; give more of the id"
    if argument.isdigit():
        return f"there is no turn {argument} (this session has {total})"
    return f"no message id in the active context starts with '{argument}' (see /context)"


def _label(session: Session, span: Span) -> str:
    first = session.active[span.start]
    return f"turn {span.number} ({first.id[:12]}: {clip(first.text, 50)})"


def slash_pin(ctx: SlashContext) -> None:
    session = ctx.session
    found = find_turn(session, ctx.argument)
    if isinstance(found, str):
        ctx.print(found)
        return
    set_pinned(session.state, pinned(session.state) | {found.ids[0]})
    message = f"pinned {_label(session, found)}: it stays verbatim through compaction"
    session.kernel.emit(session, NoticeEvent(message=message))
    ctx.print(message)


def slash_unpin(ctx: SlashContext) -> None:
    session = ctx.session
    argument = ctx.argument.strip()
    pins = pinned(session.state)
    if not pins:
        ctx.print("no turn is pinned")
        return
    if argument == "all":
        count = len(pins)
        set_pinned(session.state, ())
        message = f"unpinned {count} turn{'s' if count != 1 else ''}"
    else:
        numbers = prompt_numbers(session.transcript)
        turns = turns_of(session)
        if not argument:
            chosen = [p for p in pins if turns and p in turns[-1].ids]
        else:
            chosen = []
            if argument.isdigit():
                chosen = [p for p in pins if numbers.get(p) == int(argument)]
                chosen += [
                    p
                    for p in pins
                    for s in turns
                    if s.number == int(argument) and p in s.ids and p not in chosen
                ]
            if not chosen:
                chosen = [p for p in pins if id_matches(p, argument)]
        if not chosen:
            listing = ", ".join(
                f"turn {numbers.get(p, '?')} ({p[:12]})"
                for p in sorted(pins, key=lambda p: numbers.get(p, 0))
            )
            ctx.print(
                f"nothing pinned matches; pinned: {listing}. Use /unpin N, /unpin ID or /unpin all"
            )
            return
        set_pinned(session.state, pins - set(chosen))
        message = "unpinned " + ", ".join(f"turn {numbers.get(p, '?')}" for p in chosen)
    session.kernel.emit(session, NoticeEvent(message=message))
    ctx.print(message)
