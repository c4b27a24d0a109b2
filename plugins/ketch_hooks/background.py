"""Hooks nobody waits for: ``async`` hooks, and the events the kernel calls without
awaiting (SessionStart, SessionEnd, Notification, PreCompact, PostCompact).

They start on the running event loop and are awaited, at the latest, before the turn
ends (``settle``), so a compaction hook still finishes in a one-shot ``ketch -p``.
Where no event loop runs (a session opened or closed outside a turn), nothing else
is waiting either, and they run to completion at once. SessionEnd with a running
loop runs in a thread of its own, which the process waits for at exit.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ketch.stash import StashKey

if TYPE_CHECKING:  # pragma: no cover
    from ketch.session import Session

PENDING = StashKey[set[asyncio.Future[Any]]]()


def detach(session: Session, work: Awaitable[Any]) -> None:
    """Run ``work`` on the running loop without waiting for it."""
    task = asyncio.ensure_future(work)
    pending = session.stash.setdefault(PENDING, set())
    pending.add(task)
    task.add_done_callback(pending.discard)


def fire(
    session: Session, make: Callable[[], Awaitable[Any]], *, outlive_loop: bool = False
) -> None:
    """Start ``make()`` from synchronous code: detached on the running loop, in a
    thread of its own (``outlive_loop``: the process waits for it at exit), or to
    completion now when no loop runs."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(_run(make))
        return
    if outlive_loop:
        threading.Thread(
            target=lambda: asyncio.run(_run(make)), name="ketch-hook", daemon=False
        ).start()
    else:
        detach(session, make())


async def _run(make: Callable[[], Awaitable[Any]]) -> Any:
    return await make()


async def settle(session: Session) -> None:
    """Wait for this session's detached hooks (each is bounded by its timeout)."""
    pending = session.stash.get(PENDING)
    while pending:
        batch = list(pending)
        await asyncio.gather(*batch, return_exceptions=True)
        pending.difference_update(batch)
