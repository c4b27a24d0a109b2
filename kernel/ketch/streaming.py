"""From a provider's stream to turn events, under a progress deadline.

Deltas become ``text_delta``/``reasoning_delta`` events as they arrive. A stream
that only pretends to progress (keep-alives, empty deltas) is cut after the
provider's ``progress_timeout`` with a retryable error that says so; one that sends
no bytes at all is the provider client's ``read_timeout`` (when the progress deadline
fires first on such a stream, its message says that nothing arrived: nothing is
blamed on keep-alives that were never seen). While nothing arrives, a
``waiting`` event every few seconds tells frontends how long ketch has waited.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ketch.events import NoticeEvent, ReasoningDeltaEvent, TextDeltaEvent, WaitingEvent
from ketch.providers import (
    Completed,
    ErrorKind,
    Notice,
    ProviderError,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
)

if TYPE_CHECKING:  # pragma: no cover
    from ketch.providers import Provider, ProviderRequest

WAITING_EVERY = 5.0  # seconds between waiting events while nothing arrives
DEFAULT_PROGRESS_TIMEOUT = 480.0


class StreamStalled(ProviderError):
    """A deadline passed while streaming (no bytes, or no progress)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorKind.NETWORK, message, retryable=True)


@dataclass
class StreamOutcome:
    completed: Completed | None = None
    streamed: bool = False  # text or reasoning reached the frontends (a retry must discard it)
    text: str = ""  # the answer text streamed so far (kept when the person interrupts it)


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


async def stream_response(
    provider: Provider,
    request: ProviderRequest,
    emit: Callable[[Any], None],
    outcome: StreamOutcome,
) -> Completed:
    """Stream one response, emitting its deltas; return its Completed or raise ProviderError.

    ``outcome.streamed`` says whether any delta was emitted, also when this raises.
    """
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
            async for item in provider.stream(request):
                pretending += 1
                if _progress(item):
                    pretending = 0
                    last = loop.time()
                    budget.reschedule(last + deadline)
                if isinstance(item, TextDelta):
                    if item.text:
                        outcome.streamed = True
                        outcome.text += item.text
                        emit(TextDeltaEvent(text=item.text))
                elif isinstance(item, ReasoningDelta):
                    if item.text:
                        outcome.streamed = True
                        emit(ReasoningDeltaEvent(text=item.text))
                elif isinstance(item, Notice):
                    emit(NoticeEvent(level="warning", message=item.message))
                elif isinstance(item, Completed):
                    outcome.completed = item
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
    except (ProviderError, asyncio.CancelledError):
        raise
    except Exception as exc:  # a provider plugin bug: classify, never crash the loop
        raise ProviderError(
            ErrorKind.SERVER,
            f"provider '{getattr(provider, 'name', '?')}' failed: {type(exc).__name__}: {exc}",
        ) from exc
    finally:
        waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiter
    if outcome.completed is None:
        raise ProviderError(
            ErrorKind.MALFORMED_STREAM,
            "the provider's stream ended without a complete response (truncated)",
            retryable=True,
        )
    return outcome.completed
