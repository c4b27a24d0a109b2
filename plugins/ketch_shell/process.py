"""Running one command in its own process group, and stopping all of it.

Every command starts in a new session (``setsid``), so it and everything it spawns
share one process group. On timeout, on cancel (Ctrl-C, or a signal the frontend
turns into a cancel), and when the command exits leaving processes behind, the whole
group gets SIGTERM, then SIGKILL after a short grace: a child that ignores SIGTERM
does not survive. (A process that calls ``setsid`` itself leaves the group: that is
what the sandbox's pid namespace is for.)

Every group still running is also in :data:`GROUPS`, so ending a session, and ketch's
exit (``atexit``), kill what a cancelled turn could not. And should ketch die without
running any of that (SIGKILL, a crash), nothing is left either: a sandboxed command
dies with bwrap (``--die-with-parent``), and an unsandboxed one runs under
:mod:`ketch_shell.reaper`, which ends its group when ketch is gone.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
from dataclasses import dataclass, field

from ketch_shell.capture import HeadTail

POLL = 0.05
REAPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reaper.py")
# Process groups this process started and has not seen end: pgid -> the session's id.
GROUPS: dict[int, str] = {}


def reaped(argv: list[str]) -> list[str]:
    """``argv`` under the reaper (for commands outside the sandbox)."""
    import sys

    return [sys.executable, "-I", "-S", REAPER, str(os.getpid()), "--", *argv]


def kill_groups(owner: str | None = None) -> None:
    """SIGKILL every group still running (of one session, or all): no grace, nothing left."""
    for pgid, who in list(GROUPS.items()):
        if owner is None or who == owner:
            signal_group(pgid, signal.SIGCONT)
            signal_group(pgid, signal.SIGKILL)
            GROUPS.pop(pgid, None)


atexit.register(kill_groups)


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to the group; False when no process is left in it."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in the group. Uses /proc; elsewhere, a kill(0) probe."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return [pgid] if signal_group(pgid, 0) else []
    members: list[int] = []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
        fields = data[data.rfind(b")") + 2 :].split()
        if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            members.append(int(name))
    return members


async def stop_group(pgid: int, proc: asyncio.subprocess.Process | None, grace: float) -> bool:
    """SIGTERM the group, wait up to ``grace`` for it to empty, then SIGKILL it.

    Returns True when some process had to be killed with SIGKILL.
    """
    if not signal_group(pgid, signal.SIGTERM):
        return False
    signal_group(pgid, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    while loop.time() < deadline:
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(proc.wait()), POLL)
            continue
        if not group_members(pgid):
            return False
        await asyncio.sleep(POLL)
    killed = bool(group_members(pgid))
    signal_group(pgid, signal.SIGKILL)
    # SIGKILL is delivered asynchronously: wait (briefly) until the group is really gone.
    settle_until = loop.time() + 1.0
    while group_members(pgid) and loop.time() < settle_until:
        await asyncio.sleep(0.01)
    return killed


@dataclass
class Outcome:
    exit_code: int | None = None  # None: it was stopped before it exited
    timed_out: bool = False
    leftovers: bool = False  # processes it left running were stopped
    output: HeadTail = field(default_factory=lambda: HeadTail(0, 0))


async def _pump(stream: asyncio.StreamReader, buffer: HeadTail) -> None:
    while chunk := await stream.read(1 << 16):
        buffer.add(chunk)


async def run_foreground(
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    timeout: float,
    buffer: HeadTail,
    grace: float,
    settle: float = 1.0,
    owner: str = "",
) -> Outcome:
    """Run ``argv`` to completion (or timeout), capturing stdout+stderr into ``buffer``.

    Cancelling the awaiting task stops the whole process group before re-raising.
    ``owner`` (a session id) is who :func:`kill_groups` kills it for.
    """
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    pgid = proc.pid
    GROUPS[pgid] = owner
    outcome = Outcome(output=buffer)
    assert proc.stdout is not None
    pump = asyncio.create_task(_pump(proc.stdout, buffer))
    try:
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), timeout)
        except TimeoutError:
            outcome.timed_out = True
            await stop_group(pgid, proc, grace)
            await proc.wait()
        else:
            outcome.exit_code = proc.returncode
        # Background children may still hold the pipe, or run on without it.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(pump), settle)
        if not outcome.timed_out and group_members(pgid):
            outcome.leftovers = True
        await stop_group(pgid, None, grace)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(pump), settle)
        return outcome
    except asyncio.CancelledError:
        try:
            await stop_group(pgid, proc, min(grace, 1.0))
        finally:
            signal_group(pgid, signal.SIGKILL)
        raise
    finally:
        if not pump.done():
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pump
        if proc.returncode is None or group_members(pgid):
            signal_group(pgid, signal.SIGKILL)
        GROUPS.pop(pgid, None)  # gone, or going: never kill a reused id later
