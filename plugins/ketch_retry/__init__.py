"""ketch_retry: whether and when a failed provider call is tried again, for every provider.

Providers classify their failures (``ProviderError`` with ``kind``, ``retryable`` and
``retry_after``); after each failed attempt the kernel's loop asks
``ketch_retry_delay`` and this plugin answers (``policy.py``): a server's retry hint
wins when it is reasonable, otherwise exponential backoff with jitter, at most
``[loop] max_retries`` times; a stream that stalled is retried once at most. Without
it (``--no-plugin retry``) a failed provider call ends the turn at once. See
docs/providers.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch.api import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ProviderError, Session


@hookimpl
def ketch_retry_delay(
    session: Session, error: ProviderError, retried: tuple[ProviderError, ...]
) -> float | None:
    from ketch_retry.policy import retry_delay

    return retry_delay(error, retried, session.kernel.settings.loop.max_retries)
