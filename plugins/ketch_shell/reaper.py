"""The parent of an unsandboxed command: it ends the command's process group if ketch dies.

Run as ``python -I -S reaper.py KETCH_PID -- ARGV...`` in a new session (so this
process leads the group its command inherits). It starts ARGV, waits for it, and exits
as it did (the same code, or the same signal). If ketch is gone -- killed, crashed,
whatever way it ended -- this process is re-parented, notices within a fraction of a
second, and ends the whole group (SIGTERM, then SIGKILL): what ``--die-with-parent``
does for sandboxed commands, for the ones that run outside the sandbox.

SIGTERM aimed at the group (ketch stopping the command) is left to the command: this
process outlives it just long enough to report how it ended. Standard library only,
no site packages: it starts in a few milliseconds.
"""

from __future__ import annotations

import os
import signal
import sys
import time

POLL = 0.2  # seconds between checks that ketch is still there


def _end_group() -> None:
    group = os.getpgrp()
    os.killpg(group, signal.SIGTERM)
    time.sleep(0.5)
    os.killpg(group, signal.SIGKILL)  # ourselves included


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: reaper.py KETCH_PID -- ARGV...", file=sys.stderr)
        return 2
    ketch = int(argv[0])
    signal.signal(
        signal.SIGTERM, lambda *_: None
    )  # a handler, not SIG_IGN: the command gets the default back
    signal.signal(signal.SIGINT, lambda *_: None)
    signal.signal(signal.SIGHUP, lambda *_: None)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    if os.getppid() != ketch:
        _end_group()
    try:
        child = os.fork()
    except OSError as exc:
        print(f"could not start the command: {exc}", file=sys.stderr)
        return 126
    if child == 0:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        try:
            os.execvp(argv[2], argv[2:])
        except OSError as exc:
            print(f"could not start the command: {exc}", file=sys.stderr)
            os._exit(127)
    while True:
        signal.sigtimedwait({signal.SIGCHLD}, POLL)
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid == child:
            break
        if os.getppid() != ketch:
            _end_group()
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {number})
        os.kill(os.getpid(), number)
        return 128 + number
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
