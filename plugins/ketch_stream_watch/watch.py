"""A provider's stream under a progress deadline (``ketch_watch_stream``).

A stream that only pretends to progress (keep-alives, empty deltas) is cut after the
provider's ``progress_timeout`` with a retryable error that says so; one that sends
no bytes at all is the provider client's ``read_timeout`` (when the progress deadline
fires first on such a stream, its message says that nothing arrived: nothing is
blamed on keep-alives that were never seen). While nothing arrives, a ``waiting``
event every few seconds tells frontends how long ketch has waited.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from ketch.api import (
    ErrorKind,
    ProviderError,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
)
from ketch_stream_watch.events import WaitingEvent

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Provider

WAITING_EVERY = 5.0  # seconds between waiting events while nothing arrives
DEFAULT_PROGRESS_TIMEOUT = 480.0


class StreamStalled(ProviderError):
    """A deadline passed while streaming (no bytes, or no progress)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorKind.NETWORK, message, retryable=True)


def _progress_timeout(provider: Provider) -> float:
    value = getattr(getattr(provider, "config", None), "progress_timeout", None)
    return (
        float(value) if isinstance(value, int | float) and value > 0 else DEFAULT_PROGRESS_TIMEOUT
    )


def _progress(item: Any) -> bool:
    if isinstance(item, TextDelta | ReasoningDelta):
        return bool(item.text)
    if isinstance(item, ToolCallDelta):
        return bool(item.arguments or item.name or item.id)
    return False


async def watched(
    provider: Provider, stream: AsyncIterator[Any], emit: Callable[[Any], None]
) -> AsyncIterator[Any]:
    """``stream``'s items as they come; StreamStalled when no progress came in time.

    The consumer must close it (``contextlib.aclosing``) when it stops early: the
    deadline and the waiting events end with it."""
    loop = asyncio.get_running_loop()
    deadline = _progress_timeout(provider)
    last = loop.time()

    async def announce() -> None:
        while True:
            await asyncio.sleep(WAITING_EVERY)
            idle = loop.time() - last
            if idle >= WAITING_EVERY - 0.05:
                emit(WaitingEvent(elapsed=round(idle, 1), timeout=deadline))

    waiter = asyncio.create_task(announce())
    pretending = 0  # items since the last progress that were none (empty deltas)
    try:
        async with asyncio.timeout(deadline) as budget:
            async for item in stream:
                pretending += 1
                if _progress(item):
                    pretending = 0
                    last = loop.time()
                    budget.reschedule(last + deadline)
                yield item
    except TimeoutError:
        name = getattr(provider, "name", "provider")
        if not pretending:  # nothing came at all since the last progress: a silent server
            raise StreamStalled(
                f"{name}: no data from the model for {deadline:g} s "
                f"(read_timeout and progress_timeout in [providers.{name}])"
            ) from None
        raise StreamStalled(
            f"{name}: no progress from the model for {deadline:g} s: the stream sent only keep-alives or empty "
            f"deltas (progress_timeout in [providers.{name}])"
        ) from None
    finally:
        waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiter
