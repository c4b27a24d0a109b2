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

from ketch.api import StashKey

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session

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
        asyncio.run(complete(session, make))
        return
    if outlive_loop:
        threading.Thread(
            target=lambda: asyncio.run(complete(session, make)), name="ketch-hook", daemon=False
        ).start()
    else:
        detach(session, make())


async def complete(session: Session, make: Callable[[], Awaitable[Any]]) -> Any:
    """``make()`` and the ``async`` hooks it started: this loop ends when they are done."""
    try:
        return await make()
    finally:
        await settle(session)


async def settle(session: Session) -> None:
    """Wait for this session's detached hooks on this loop (each is bounded by its
    timeout); those of a loop that has ended went with it."""
    pending = session.stash.get(PENDING)
    loop = asyncio.get_running_loop()
    while pending:
        pending.difference_update([task for task in pending if task.get_loop() is not loop])
        mine = list(pending)
        if not mine:
            return
        await asyncio.gather(*mine, return_exceptions=True)
        pending.difference_update(mine)
