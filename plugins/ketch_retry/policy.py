"""The retry policy: one for every provider, whatever its wire format or transport.

A server's retry hint wins when it is reasonable, otherwise exponential backoff with
jitter, at most ``max_retries`` times. A stream that stalled (a deadline) is retried
once at most: a stalled server usually stays stalled, and the person has already
waited the whole deadline.
"""

from __future__ import annotations

import random

from ketch.api import ErrorKind, ProviderError

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


def retry_delay(
    error: ProviderError, retried: tuple[ProviderError, ...], max_retries: int
) -> float | None:
    """How long to wait before the next attempt after ``error``, or None to give up;
    ``retried`` are this request's earlier failures that were tried again."""
    if not error.retryable or len(retried) >= max_retries:
        return None
    if is_deadline(error) and any(is_deadline(e) for e in retried):
        return None
    return backoff_delay(len(retried), error.retry_after)


def is_deadline(error: ProviderError) -> bool:
    """A deadline passed: the client's read timeout, or the kernel's progress deadline
    (its ``StreamStalled`` message names ``progress_timeout`` too)."""
    return error.kind == ErrorKind.NETWORK and (
        "read_timeout" in error.message or "progress_timeout" in error.message
    )
