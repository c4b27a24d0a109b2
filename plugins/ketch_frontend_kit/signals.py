"""Signals end a turn, never ketch's bookkeeping.

SIGINT, SIGTERM and SIGHUP all do the same thing while ketch runs a coroutine: the
running task is cancelled, so the turn records every unfinished call as cancelled,
tools end the process groups they started, and exactly one ``turn_end cancelled``
goes out; then the frontend exits with 128 + the signal's number (the shell's
convention: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass
class Outcome(Generic[T]):
    value: T | None = None
    signal: int | None = None  # the signal that cancelled the run, if one did

    @property
    def exit_code(self) -> int | None:
        """128 + signal when a signal ended the run, else None (the caller decides)."""
        return 128 + self.signal if self.signal is not None else None


def run_cancellable(main: Callable[[], Awaitable[T]]) -> Outcome[T]:
    """Run ``main()`` in a new event loop; a handled signal cancels it.

    ``main`` should handle the cancellation (a turn does) and return; if the
    cancellation escapes it instead, the outcome has no value, only the signal.
    """
    outcome: Outcome[T] = Outcome()

    async def runner() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def cancel(signum: int) -> None:
            if outcome.signal is None:
                outcome.signal = signum
            inner.cancel()

        inner = asyncio.ensure_future(main())
        installed = []
        for signum in HANDLED:
            try:
                loop.add_signal_handler(signum, cancel, signum)
                installed.append(signum)
            except (
                NotImplementedError,
                RuntimeError,
                ValueError,
            ):  # not the main thread, or no such signal
                pass
        try:
            outcome.value = await inner
        except asyncio.CancelledError:
            if outcome.signal is None:
                raise
        finally:
            for signum in installed:
                loop.remove_signal_handler(signum)

    asyncio.run(runner())
    return outcome
