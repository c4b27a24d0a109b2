"""From a provider's stream to turn events.

Deltas become ``text_delta``/``reasoning_delta`` events as they arrive. A plugin may
watch the stream (``ketch_watch_stream``: a progress deadline, ``waiting`` events
while nothing arrives); without one, the stream is read as it comes, and only the
provider client's own timeouts end a stalled one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ketch.events import NoticeEvent, ReasoningDeltaEvent, TextDeltaEvent
from ketch.providers import (
    Completed,
    ErrorKind,
    Notice,
    ProviderError,
    ReasoningDelta,
    TextDelta,
)

if TYPE_CHECKING:  # pragma: no cover
    from ketch.hooks import Hooks
    from ketch.providers import Provider, ProviderRequest


@dataclass
class StreamOutcome:
    completed: Completed | None = None
    streamed: bool = False  # text or reasoning reached the frontends (a retry must discard it)
    text: str = ""  # the answer text streamed so far (kept when the person interrupts it)


async def stream_response(
    provider: Provider,
    request: ProviderRequest,
    emit: Callable[[Any], None],
    outcome: StreamOutcome,
    hooks: Hooks,
) -> Completed:
    """Stream one response, emitting its deltas; return its Completed or raise ProviderError.

    ``outcome.streamed`` says whether any delta was emitted, also when this raises.
    """
    try:
        stream = provider.stream(request)
        watched = hooks.first("ketch_watch_stream", provider=provider, stream=stream, emit=emit)
        # A watcher's deadline and waiting events end with the response, however it ends.
        closing = contextlib.aclosing(watched) if watched else contextlib.nullcontext(stream)
        async with closing as items:
            async for item in items:
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
    except (ProviderError, asyncio.CancelledError):
        raise
    except Exception as exc:  # a provider plugin bug: classify, never crash the loop
        raise ProviderError(
            ErrorKind.SERVER,
            f"provider '{getattr(provider, 'name', '?')}' failed: {type(exc).__name__}: {exc}",
        ) from exc
    if outcome.completed is None:
        raise ProviderError(
            ErrorKind.MALFORMED_STREAM,
            "the provider's stream ended without a complete response (truncated)",
            retryable=True,
        )
    return outcome.completed
