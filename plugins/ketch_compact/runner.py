"""When to compact, and running a compaction: the context budget's policy.

Before every request the budget plugin asks plugins to make room (``budget_fit_context``):
past ``[compaction] trigger`` of the effective capacity this compacts toward
``target``; after a provider said the context was too long, toward what that error
allows (at least halving the messages). A compaction replaces ``session.active`` (the
transcript is never touched), records what it did in ``session.state`` (through
``ketch_context_kit.compaction``) and says so with a ``compaction`` event. When the
request still does not fit, this stops the turn with a breakdown of what is too big.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from typing import TYPE_CHECKING, Any

from ketch.api import ContextOverflow, NoticeEvent
from ketch_context_kit.budget import estimator_for
from ketch_context_kit.compaction import (
    CompactionEvent,
    CompactionRequest,
    CompactionResult,
    add_record,
    pinned,
    records,
)

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session
    from ketch_context_kit.request import RequestBudget


def budget_settings(session: Session) -> Any:
    from ketch_compact.settings import CompactorSettings

    return session.kernel.settings.of(CompactorSettings)


async def fit(session: Session, budget: RequestBudget, overflow: int | None) -> None:
    """Compact when the request passes the trigger (or a provider said it is too long),
    then stop the turn if it still cannot fit."""
    settings = budget_settings(session)
    capacity = budget.capacity
    if overflow is not None:
        capacity = min(overflow, budget.capacity)
        # The provider said it does not fit, whatever the estimate says: at least halve.
        target = min(int(settings.target * capacity), budget.fixed + budget.message_tokens // 2)
        await compact(
            session, "overflow", system_tokens=budget.fixed, capacity=capacity, target_tokens=target
        )
    elif budget.projected > settings.trigger * budget.capacity:
        await compact(session, "auto", system_tokens=budget.fixed, capacity=budget.capacity)
    now = dataclasses.replace(
        budget,
        message_tokens=estimator_for(session).messages(session.active),
        capacity=capacity,
    )
    if not now.fits:
        raise ContextOverflow(overflow_report(session, now, settings.keep_recent_turns))


async def compact(
    session: Session,
    reason: str,
    *,
    system_tokens: int,
    capacity: int,
    target_tokens: int | None = None,
    instructions: str | None = None,
) -> CompactionResult | None:
    """Ask the compactor (``compact_compactor``) to shrink the active context and apply it.

    The compactor may return its result or an awaitable of it (a model summarizer).
    Returns the applied result, or None when no compactor answered or nothing changed.
    The transcript is never touched; the active context is replaced, the record kept
    and a ``compaction`` event emitted.
    """
    kernel = session.kernel
    settings = budget_settings(session)
    estimator = estimator_for(session)
    before_messages = session.active
    before = system_tokens + estimator.messages(before_messages)
    target = int(settings.target * capacity) if target_tokens is None else int(target_tokens)
    kernel.hooks.call("compact_before", session=session, reason=reason)
    request = CompactionRequest(
        session=session,
        messages=before_messages,
        system_tokens=system_tokens,
        target_tokens=max(target, 1),
        capacity_tokens=capacity,
        reason=reason,  # type: ignore[arg-type]
        instructions=instructions,
        pinned=frozenset(pinned(session.state)),
    )
    try:
        result: Any = kernel.hooks.first("compact_compactor", request=request)
        if inspect.isawaitable(result):
            result = await result
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - a compactor bug must not end the turn
        kernel.emit(
            session,
            NoticeEvent(level="warning", message=f"compaction failed: {type(exc).__name__}: {exc}"),
        )
        return None
    if not isinstance(result, CompactionResult):
        return None
    if session.active is not before_messages:
        return None  # the context moved on while a model summarized: stale
    if tuple(m.id for m in result.messages) == tuple(m.id for m in before_messages):
        return None  # nothing to compact
    session.set_active(result.messages, "compaction")
    after = system_tokens + estimator.messages(session.active)
    add_record(
        session.state,
        {
            "n": len(records(session.state)) + 1,
            "reason": reason,
            "compactor": result.compactor,
            "before_tokens": before,
            "after_tokens": after,
            "record": result.record,
        },
    )
    kernel.emit(
        session,
        CompactionEvent(
            before_tokens=before,
            after_tokens=after,
            compactor=result.compactor,
            summary=result.summary,
        ),
    )
    kernel.hooks.call("compact_after", session=session, result=result)
    return result


def overflow_report(session: Session, budget: RequestBudget, keep_recent_turns: int) -> str:
    """Why the context does not fit even after compaction, and what the person can do."""
    from ketch_context_kit.request import largest_parts, remedies_for
    from ketch_context_kit.turns import split_turns

    estimator = estimator_for(session)
    active = session.active
    spans = split_turns(active)
    pinned_ids = pinned(session.state)
    recent = spans[-keep_recent_turns:] if spans else []
    recent_ids = {i for span in recent for i in span.ids}
    pinned_messages = [
        m
        for span in spans
        if pinned_ids.intersection(span.ids) and not recent_ids.intersection(span.ids)
        for m in active[span.start : span.end]
    ]
    recent_tokens = sum(estimator.messages(active[s.start : s.end]) for s in recent)
    pinned_tokens = estimator.messages(pinned_messages)
    capacity = budget.capacity
    total = budget.projected
    other = total - budget.fixed - recent_tokens - pinned_tokens
    largest = largest_parts(session, budget)
    breakdown = (
        f"system prompt ~{budget.system_tokens:,} tokens"
        + (f" (largest: {largest})" if largest else "")
        + f", tool schemas ~{budget.schema_tokens:,} ({len(budget.specs)} tools), pinned ~{pinned_tokens:,}, "
        f"recent ~{recent_tokens:,}, other ~{max(other, 0):,}; total ~{total:,} of an effective capacity of {capacity:,}"
    )
    remedies = []
    if pinned_tokens:
        remedies.append("unpin turns (/unpin)")
    if recent_tokens > capacity // 2:
        remedies.append("send a shorter message, or ask for less output at once")
    remedies += remedies_for(budget)
    return (
        "the context does not fit the model even after compaction: "
        + breakdown
        + ". Remedies: "
        + "; ".join(remedies)
        + "."
    )
