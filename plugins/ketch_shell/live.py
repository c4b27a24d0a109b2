"""A running command's output, shown live: whole lines, a few times a second.

The pump that reads the command's pipe feeds every chunk here as well as into the
head-and-tail buffer the model's result comes from. Complete lines are passed on to
``ctx.output`` (the frontends' live tail) at most every :data:`EVERY` seconds, and at
most :data:`MAX_LINES` at a time (the newest: a frontend shows a tail anyway). Escape
sequences are dropped and carriage-return redraws collapsed, as in the result.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable

from ketch_shell.capture import HeadTail, clean

EVERY = 0.25  # seconds between updates at most
MAX_LINES = 40  # lines per update at most (the newest)
MAX_LINE_CHARS = 2_000


class LiveLines:
    def __init__(self, send: Callable[[str], None]) -> None:
        self.send = send
        self.partial = b""
        self.lines: deque[str] = deque(maxlen=MAX_LINES)
        self.skipped = 0
        self.task: asyncio.Task[None] | None = None

    def feed(self, chunk: bytes) -> None:
        data = self.partial + chunk
        *complete, self.partial = data.split(b"\n")
        if len(self.partial) > MAX_LINE_CHARS * 4:  # a line that never ends: show it in pieces
            complete.append(self.partial)
            self.partial = b""
        for raw in complete:
            if len(self.lines) == self.lines.maxlen:
                self.skipped += 1
            line = clean(raw.decode("utf-8", "replace"))
            self.lines.append(line[:MAX_LINE_CHARS])

    def flush(self) -> None:
        if not self.lines:
            return
        lines = list(self.lines)
        self.lines.clear()
        if self.skipped:
            lines.insert(0, f"[… {self.skipped:,} more lines]")
            self.skipped = 0
        with contextlib.suppress(Exception):  # showing output must never stop the command
            self.send("\n".join(lines))

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(EVERY)
            self.flush()

    def start(self) -> None:
        self.task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        if self.partial.strip():
            self.feed(b"\n")
        self.flush()


class TeeHeadTail(HeadTail):
    """The result's head-and-tail buffer that also feeds the live lines."""

    live: LiveLines | None = None

    def add(self, chunk: bytes) -> None:
        super().add(chunk)
        if self.live is not None:
            self.live.feed(chunk)
