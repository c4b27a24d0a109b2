"""ketch_stream_watch: a provider's stream under a progress deadline, and ``waiting``
events while nothing arrives.

It answers ``ketch_watch_stream`` (``watch.py``): a stream that only pretends to
progress (keep-alives, empty deltas) is cut after the provider's ``progress_timeout``
with a retryable error that says so, and every few seconds without a delta a
``waiting`` event tells frontends how long ketch has waited. Without it
(``--no-plugin stream_watch``) a stream is read as it comes: only the provider
client's ``read_timeout`` (no bytes at all) ends a stalled one, and no ``waiting``
events go out. See docs/providers.md. The ``waiting`` event is this plugin's
(``ketch_stream_watch.events.WaitingEvent``, registered with ``ketch_register_events``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Event, Provider


@hookimpl
def ketch_register_events(register: Callable[[type[Event]], None]) -> None:
    from ketch_stream_watch.events import WaitingEvent

    register(WaitingEvent)


@hookimpl
def ketch_watch_stream(
    provider: Provider, stream: AsyncIterator[Any], emit: Callable[[Any], None]
) -> AsyncIterator[Any]:
    from ketch_stream_watch.watch import watched

    return watched(provider, stream, emit)
