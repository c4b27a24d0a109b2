"""One run of a helper program: stdin in, capped stdout and stderr out, its group ended.

The program starts in a session of its own (``setsid``), so it and every child it
starts share one process group. It is done when *it* exits, not when its stdout
reaches EOF: ``(sleep 60 &); echo '{"decision": "allow"}'`` leaves a child holding
stdout open, and waiting for EOF would wait for that child. Once the program has
exited (or its timeout passed, or the caller was cancelled), the whole group gets
SIGTERM, then SIGKILL after :data:`GRACE` seconds, what it had written is drained
(at most :data:`DRAIN` seconds more), and the pipes are closed. A child that left the
group with ``setsid`` of its own is beyond reach here (the sandbox's pid namespace is
what contains those).

Built on the event loop's public subprocess API (``loop.subprocess_exec`` and its
transport), so every pipe is closed by ketch before the loop ends, and no transport
is left for the garbage collector to close on a dead loop ("Event loop is closed").
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

GRACE = 1.0  # seconds between SIGTERM and SIGKILL for what the program left running
DRAIN = 0.5  # seconds to read what is still in the pipes once the group is gone
POLL = 0.02


@dataclass(frozen=True)
class Finished:
    """How a run ended. ``code`` is None when the program did not exit by itself (it
    timed out, or could not start: ``problem`` says which); ``*_cut``: bytes dropped
    past the cap."""

    code: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    problem: str = ""
    stdout_cut: int = 0
    stderr_cut: int = 0
    leftovers: bool = False  # processes it left behind were stopped


class _Capped:
    def __init__(self, limit: int) -> None:
        self.limit, self.data, self.cut = limit, bytearray(), 0

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.cut += max(0, len(chunk) - max(room, 0))


class _Capture(asyncio.SubprocessProtocol):
    def __init__(self, limit: int) -> None:
        self.streams = {1: _Capped(limit), 2: _Capped(limit)}
        self.exited = asyncio.Event()
        self.open_pipes = {1, 2}
        self.drained = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd in self.streams:
            self.streams[fd].add(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self.open_pipes.discard(fd)
        if not self.open_pipes:
            self.drained.set()

    def process_exited(self) -> None:
        self.exited.set()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def end_group(pgid: int, grace: float = GRACE) -> bool:
    """SIGTERM the group, SIGKILL whatever is left after ``grace``. True when anything
    was still running."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    while loop.time() < deadline and _group_alive(pgid):
        await asyncio.sleep(POLL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    return True


async def run_once(
    argv: Sequence[str],
    *,
    stdin: bytes,
    cwd: str | os.PathLike[str],
    env: dict[str, str],
    timeout: float,
    max_output: int,
) -> Finished:
    """Run ``argv`` once with ``stdin``; see the module docstring. Cancelling the
    caller ends the group too (the cancellation then goes on)."""
    loop = asyncio.get_running_loop()
    try:
        transport, capture = await loop.subprocess_exec(
            lambda: _Capture(max_output),
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        return Finished(None, problem=f"could not start ({exc.strerror or exc})")
    pgid = transport.get_pid()
    problem = ""
    leftovers = False
    try:
        _feed(transport, stdin)
        try:
            await asyncio.wait_for(capture.exited.wait(), timeout)
        except TimeoutError:
            problem = f"timed out after {timeout:g} s"
    finally:
        # Also when cancelled: the group must not outlive the caller.
        leftovers = await asyncio.shield(_finish(transport, capture, pgid))
    code = transport.get_returncode() if not problem else None
    out, err = capture.streams[1], capture.streams[2]
    return Finished(
        code,
        bytes(out.data),
        bytes(err.data),
        problem,
        stdout_cut=out.cut,
        stderr_cut=err.cut,
        leftovers=leftovers and not problem,
    )


def _feed(transport: asyncio.SubprocessTransport, data: bytes) -> None:
    pipe: Any = transport.get_pipe_transport(0)
    if pipe is None:
        return
    # A program that exits without reading its stdin breaks the pipe: the transport
    # drops what was left to write (no error for anyone to see).
    with contextlib.suppress(ConnectionError, OSError, RuntimeError):
        pipe.write(data)
    with contextlib.suppress(ConnectionError, OSError, RuntimeError):
        pipe.close()


async def _finish(transport: asyncio.SubprocessTransport, capture: _Capture, pgid: int) -> bool:
    left = await end_group(pgid)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(capture.drained.wait(), DRAIN)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(capture.exited.wait(), DRAIN)
    transport.close()
    return left
