"""``/context``: what the next request would carry, and what compaction did.

Turns are numbered by their place in the saved transcript (the numbers ``/pin`` takes):

* verbatim: the turn's messages are in the active context exactly as saved;
* pruned: the turn is there, but some of its large tool outputs are short notes;
* summarized: a compaction summary stands for the turn;
* excluded: the turn is in the transcript but nothing in the active context stands
  for it (a compactor that kept no record, or a summary that itself was dropped).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ketch_context_kit.budget import context_budget, context_state, estimator_for
from ketch_context_kit.compaction import origins, pinned, records
from ketch_context_kit.meter import band
from ketch_context_kit.turns import prompt_numbers

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session


def ranges(numbers: Iterable[int]) -> str:
    """1, 2, 3, 5 -> "1-3, 5"."""
    items = sorted(set(numbers))
    out: list[str] = []
    start = prev = None
    for n in items:
        if start is None:
            start = prev = n
        elif n == prev + 1:  # type: ignore[operator]
            prev = n
        else:
            out.append(f"{start}-{prev}" if start != prev else f"{start}")
            start = prev = n
    if start is not None:
        out.append(f"{start}-{prev}" if start != prev else f"{start}")
    return ", ".join(out) or "none"


def turn_of(transcript: Iterable[object]) -> dict[str, int]:
    """Every transcript message id -> the number of the turn it belongs to (0 before any)."""
    owner: dict[str, int] = {}
    current = 0
    numbers = prompt_numbers(transcript)  # type: ignore[arg-type]
    for message in transcript:
        current = numbers.get(message.id, current)  # type: ignore[attr-defined]
        owner[message.id] = current  # type: ignore[attr-defined]
    return owner


def _trigger(session: Session) -> str:
    """When compaction starts, as its ``[compaction]`` table says (when one is configured)."""
    trigger = session.kernel.settings.section("compaction").get("trigger")
    return f"; compaction at {trigger:.0%}" if isinstance(trigger, int | float) else ""


def report(session: Session) -> str:
    from ketch_context_kit.request import measure

    estimator = estimator_for(session)
    budget = context_budget(session)
    request = measure(session)
    system, parts, specs = request.system, request.parts, request.specs
    messages_tokens = request.message_tokens
    total = request.projected
    share = request.utilization
    lines = [
        f"Context window {budget.window:,} tokens ({budget.source}); effective capacity {budget.capacity:,} "
        f"(output reserve {budget.reserved:,}, overhead {budget.overhead:,}"
        + (
            f", lowered after the provider's overflow error to {budget.learned_capacity:,}"
            if budget.learned_capacity
            else ""
        )
        + ")",
        f"Next request ~{total:,} tokens: {share:.0%} ({band(share)})" + _trigger(session),
        f"  system prompt ~{estimator.text(system):,}: "
        + ", ".join(
            f"{p.title or p.source or 'untitled'} ~{estimator.text(p.render()):,}"
            for p in sorted(parts, key=lambda p: p.order)
            if p.text.strip()
        ),
        f"  tool schemas  ~{request.schema_tokens:,} ({len(specs)} tool{'s' if len(specs) != 1 else ''}, {session.mode} mode)",
        f"  messages      ~{messages_tokens:,} ({len(session.active)} messages)",
    ]
    lines += turns_section(session)
    state = session.state.get("context") if isinstance(session.state.get("context"), dict) else {}
    excluded = list((state or {}).get("excluded") or [])
    if excluded:
        lines.append("Left out of the system prompt:")
        lines += [f"  {item}" for item in excluded]
    invisible = (state or {}).get("invisible") or {}
    if invisible:
        lines.append(
            "Invisible characters removed: "
            + "; ".join(f"{name}: {sum(c.values())}" for name, c in invisible.items())
        )
    compactions = records(session.state)
    if compactions:
        last = compactions[-1]
        lines.append(
            f"Compactions: {len(compactions)} (last: {last.get('reason', '?')}, {last.get('compactor', '?')}, "
            f"{last.get('before_tokens', 0):,} -> {last.get('after_tokens', 0):,} tokens)"
        )
    calibration = context_state(session)
    if calibration.get("samples"):
        lines.append(
            f"Token estimates: {calibration['chars_per_token']:.2f} characters per token, from {calibration['samples']} provider reports"
        )
    else:
        lines.append(
            "Token estimates: ~4 characters per token (no provider report to calibrate from yet)"
        )
    return "\n".join(lines)


def turns_section(session: Session) -> list[str]:
    transcript = session.transcript
    numbers = prompt_numbers(transcript)
    owner = turn_of(transcript)
    stands = origins(records(session.state))
    active_ids = {m.id for m in session.active}
    verbatim: set[int] = set()
    pruned: set[int] = set()
    summarized: set[int] = set()
    pruned_count = 0
    summaries = 0
    summary_tokens = 0
    estimator = estimator_for(session)
    for message in session.active:
        if message.id in owner:
            verbatim.add(owner[message.id])
            continue
        how, ids = stands.get(message.id, ("", ()))
        turns = {owner[i] for i in ids if i in owner}
        if how == "pruned":
            pruned |= turns
            pruned_count += 1
        elif turns:
            summarized |= turns
            summaries += 1
            summary_tokens += estimator.message(message)
    covered = active_ids | {i for m in session.active for i in stands.get(m.id, ("", ()))[1]}
    excluded = {owner[m.id] for m in transcript if m.id not in covered}
    all_turns = set(numbers.values())
    pins = {numbers[p] for p in pinned(session.state) if p in numbers}
    verbatim -= pruned
    summarized -= verbatim | pruned
    excluded -= verbatim | pruned | summarized
    lines = [f"Turns ({len(all_turns)} in the saved transcript):"]
    lines.append(f"  verbatim    {ranges(n for n in verbatim if n)}")
    lines.append(f"  pinned      {ranges(pins)}")
    lines.append(
        f"  pruned      {ranges(n for n in pruned if n)}"
        + (f" ({pruned_count} tool outputs replaced by notes)" if pruned_count else "")
    )
    lines.append(
        f"  summarized  {ranges(n for n in summarized if n)}"
        + (f" (in {summaries} summary, ~{summary_tokens:,} tokens)" if summaries else "")
    )
    lines.append(f"  excluded    {ranges(n for n in excluded if n)}")
    return lines
