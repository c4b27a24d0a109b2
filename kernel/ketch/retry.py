"""Retrying provider calls: one policy for every provider.

Providers classify their failures (``ProviderError`` with ``kind``, ``retryable`` and
``retry_after``); the loop decides here whether and when to try again: a server's
retry hint wins when it is reasonable, otherwise exponential backoff with jitter, at
most ``[loop] max_retries`` times. A stream that stalled (a deadline) is retried
once at most: a stalled server usually stays stalled, and the person has already
waited the whole deadline.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ketch.providers import ErrorKind, ProviderError

HINT_CAP = 60.0  # seconds: a longer retry-after means "come back much later": give up now


def backoff_delay(
    attempt: int, retry_after: float | None, *, cap: float = HINT_CAP
) -> float | None:
    """Seconds to wait before retry number ``attempt`` (0-based), or None: do not retry.

    A server hint (retry-after) wins when 0 < hint <= cap; a larger hint means the
    server wants us gone for longer than is sensible to block a turn. Otherwise
    exponential backoff, 0.5 s doubling up to 8 s, with jitter (as the official SDKs).
    """
    if retry_after is not None:
        if 0 < retry_after <= cap:
            return retry_after
        if retry_after > cap:
            return None
    return min(0.5 * 2**attempt, 8.0) * (1 - 0.25 * random.random())


class StreamStalled(ProviderError):
    """A deadline passed while streaming (no bytes, or no progress)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorKind.NETWORK, message, retryable=True)


@dataclass
class RetryPolicy:
    max_retries: int
    attempts: int = 0
    stalls: int = 0

    def delay(self, error: ProviderError) -> float | None:
        """How long to wait before the next attempt, or None to give up on ``error``."""
        if not error.retryable or self.attempts >= self.max_retries:
            return None
        if isinstance(error, StreamStalled) or _is_deadline(error):
            if self.stalls >= 1:
                return None
            self.stalls += 1
        delay = backoff_delay(self.attempts, error.retry_after)
        if delay is not None:
            self.attempts += 1
        return delay


def _is_deadline(error: ProviderError) -> bool:
    return error.kind == ErrorKind.NETWORK and (
        "read_timeout" in error.message or "progress_timeout" in error.message
    )
