"""The retry policy the ketch_retry plugin answers ``ketch_retry_delay`` with; the turns
it drives are in tests/kernel/test_kernel_loop.py (scripted), tests/kernel/test_kernel_faults.py
(stalls) and tests/providers/test_providers_loop.py (real HTTP)."""

from __future__ import annotations

from pathlib import Path

from ketch.api import ErrorKind, ProviderError
from ketch.testing import Harness, error, text
from ketch_retry.policy import backoff_delay, retry_delay


def test_backoff_honours_retry_after_and_caps() -> None:
    assert backoff_delay(0, 2.5) == 2.5
    assert backoff_delay(0, 500) is None
    for attempt in range(6):
        delay = backoff_delay(attempt, None)
        assert delay is not None and 0 < delay <= 8.0
    assert backoff_delay(5, None) > backoff_delay(0, None)  # type: ignore[operator]


def test_retries_stop_at_max_retries_and_never_for_a_final_error() -> None:
    busy = ProviderError(ErrorKind.OVERLOADED, "busy", retryable=True)
    assert retry_delay(busy, (), 2) is not None
    assert retry_delay(busy, (busy,), 2) is not None
    assert retry_delay(busy, (busy, busy), 2) is None
    assert retry_delay(ProviderError(ErrorKind.AUTH, "no"), (), 3) is None


def test_a_stalled_stream_is_retried_once() -> None:
    stalled = ProviderError(
        ErrorKind.NETWORK, "x: no progress (progress_timeout in [providers.x])", retryable=True
    )
    busy = ProviderError(ErrorKind.OVERLOADED, "busy", retryable=True)
    assert retry_delay(stalled, (busy,), 5) is not None
    assert retry_delay(stalled, (busy, stalled), 5) is None
    assert retry_delay(busy, (stalled,), 5) is not None  # only a second stall gives up


def test_without_the_plugin_a_retryable_error_ends_the_turn(tmp_path: Path) -> None:
    script = [error("overloaded", "busy", retryable=True, retry_after=0.001), text("never")]
    h = Harness.create(tmp_path, script=script, bundled=["guards"])
    end = h.run("x")
    assert end.stop_reason == "error" and len(h.provider.requests) == 1
    (err,) = h.of_type("error")
    assert err.kind == "overloaded" and err.retry_in is None


def test_with_the_plugin_the_same_error_is_retried(tmp_path: Path) -> None:
    script = [error("overloaded", "busy", retryable=True, retry_after=0.001), text("fine")]
    h = Harness.create(tmp_path, script=script, bundled=["guards", "retry"])
    end = h.run("x")
    assert end.stop_reason == "end_turn" and end.text == "fine"
    assert [e.type for e in h.events if e.type in ("error", "retry")] == ["error", "retry"]
