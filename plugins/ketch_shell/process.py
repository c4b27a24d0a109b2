"""Running one command in its own process group, and stopping all of it.

Every command starts in a new session (``setsid``), so it and everything it spawns
share one process group. On timeout, on cancel (Ctrl-C, or a signal the frontend
turns into a cancel), and when the command exits leaving processes behind, the whole
group gets SIGTERM, then SIGKILL after a short grace: a child that ignores SIGTERM
does not survive.

A process that leaves the group (``setsid``, a double fork) is caught one level up: a
sandboxed command runs in its own PID namespace, which dies with it (bwrap
``--unshare-pid``, ``--die-with-parent``); an unsandboxed one runs under
:mod:`ketch_shell.reaper`, a child subreaper that every orphan of the command is
re-parented to and that ends all of them. So a reaper's group is never SIGKILLed as a
whole while the reaper could still have descendants (that would orphan them to init):
the other members are killed and the reaper is told (SIGUSR1) to kill the rest.

Every group still running is also in :data:`GROUPS`, so ending a session, and ketch's
exit (``atexit``), kill what a cancelled turn could not. And should ketch die without
running any of that (SIGKILL, a crash), nothing is left either: bwrap's namespace dies
with ketch, and the reaper notices ketch is gone and ends everything below it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import sys
from dataclasses import dataclass, field

from ketch_shell.capture import HeadTail

POLL = 0.05
REAPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reaper.py")
# Process groups this process started and has not seen end: pgid -> the session's id.
# Process-wide, not a kernel's: they are this OS process's children, all killed at its
# exit (atexit), and a session id (unique across the kernels of ``ketch acp``) picks a
# session's own at its end.
GROUPS: dict[int, str] = {}
# The groups whose leader is a reaper (see the module docstring).
REAPED: set[int] = set()


def reaped(argv: list[str]) -> list[str]:
    """``argv`` under the reaper (for commands outside the sandbox)."""
    return [sys.executable, "-I", "-S", REAPER, str(os.getpid()), "--", *argv]


def is_reaped(argv: list[str]) -> bool:
    return len(argv) > 3 and argv[3] == REAPER


def reaper_options(argv: list[str], **options: object) -> list[str]:
    """A reaped ``argv`` with reaper options (``grace``, ``report``) added."""
    if not is_reaped(argv):
        return list(argv)
    extra = [w for key, value in options.items() for w in (f"--{key}", str(value))]
    return [*argv[:5], *extra, *argv[5:]]


def register(pgid: int, owner: str | None, argv: list[str]) -> None:
    """A group started for ``owner`` (a session id; None: tracked elsewhere, as jobs are)."""
    if owner is not None:
        GROUPS[pgid] = owner
    if is_reaped(argv):
        REAPED.add(pgid)


def forget(pgid: int) -> None:
    GROUPS.pop(pgid, None)
    REAPED.discard(pgid)


def kill_now(pgid: int) -> None:
    """SIGKILL the group: at once, and everything that left it too (a reaper's group:
    its other members, and SIGUSR1 to the reaper, which kills every descendant)."""
    signal_group(pgid, signal.SIGCONT)
    if pgid not in REAPED:
        signal_group(pgid, signal.SIGKILL)
        return
    if _parent_of(pgid) == os.getpid():  # still our reaper (not an id reused since)
        with contextlib.suppress(OSError):
            os.kill(pgid, signal.SIGUSR1)
    for pid in group_members(pgid):
        if pid != pgid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 else None


def kill_groups(owner: str | None = None) -> None:
    """SIGKILL every group still running (of one session, or all): no grace, nothing left."""
    for pgid, who in list(GROUPS.items()):
        if owner is None or who == owner:
            kill_now(pgid)
            forget(pgid)


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
    kill_now(pgid)
    # SIGKILL is delivered asynchronously: wait (briefly) until the group is really gone
    # (a reaper first kills what it adopted, then itself exits).
    settle_until = loop.time() + 2.0
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
    report_read, report_write = os.pipe() if is_reaped(argv) else (-1, -1)
    try:
        proc = await asyncio.create_subprocess_exec(
            *reaper_options(argv, grace=grace, report=report_write),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
            pass_fds=(report_write,) if report_write >= 0 else (),
        )
    except BaseException:
        _close(report_read)
        raise
    finally:
        _close(report_write)
    pgid = proc.pid
    register(pgid, owner, argv)
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
        if not outcome.timed_out and (group_members(pgid) or _reported(report_read, "left")):
            outcome.leftovers = True
        await stop_group(pgid, None, grace)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(pump), settle)
        return outcome
    except asyncio.CancelledError:
        try:
            await stop_group(pgid, proc, min(grace, 1.0))
        finally:
            kill_now(pgid)
        raise
    finally:
        if not pump.done():
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pump
        if proc.returncode is None or group_members(pgid):
            kill_now(pgid)
        forget(pgid)  # gone, or going: never kill a reused id later
        _close(report_read)


def _close(fd: int) -> None:
    if fd >= 0:
        with contextlib.suppress(OSError):
            os.close(fd)


def _reported(fd: int, word: str) -> bool:
    """Whether the reaper wrote ``word`` on its report pipe (it has exited: no wait)."""
    if fd < 0:
        return False
    os.set_blocking(fd, False)
    try:
        return word.encode() in os.read(fd, 4096)
    except OSError:
        return False
