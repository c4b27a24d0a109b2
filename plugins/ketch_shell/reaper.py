"""The parent of an unsandboxed command: nothing the command starts outlives it.

Run as ``python -I -S reaper.py KETCH_PID [--grace S] [--report FD] -- ARGV...`` in a
new session (so this process leads the group its command inherits). It makes itself a
**child subreaper** (``PR_SET_CHILD_SUBREAPER``): every process the command starts and
then orphans -- a double-forked daemon, ``setsid -f``, ``nohup ... &`` -- is re-parented
to this process instead of to init, whatever process group or session it moved to. So
"everything the command started" is exactly this process's descendants, and ending
them all is a walk of the process tree:

* when the command exits, whatever it left running gets SIGTERM, ``--grace`` seconds,
  then SIGKILL, until no descendant is left (``--report FD`` gets ``left`` when there
  was something to stop); then this process exits as the command did (the same code,
  or the same signal);
* SIGTERM, SIGINT or SIGHUP (ketch stopping the command: it signals the group) are
  passed on, as SIGTERM, to the descendants that left the group;
* SIGUSR1 (ketch: "now") SIGKILLs every descendant at once;
* if ketch is gone -- killed, crashed, whatever way it ended -- this process is
  re-parented, notices within a fraction of a second, and ends every descendant
  (SIGTERM, then SIGKILL).

ketch never SIGKILLs this process while a descendant may be alive (it would orphan
them to init): it kills the other members of the group and sends SIGUSR1. Standard
library only, no site packages: it starts in a few milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

POLL = 0.2  # seconds between checks that ketch is still there
PR_SET_CHILD_SUBREAPER = 36
STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
WAITED = {signal.SIGCHLD, signal.SIGUSR1, *STOPS}


def _subreaper() -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def descendants(root: int) -> list[int]:
    """Live (non-zombie) processes below ``root``, from /proc."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()
        if len(fields) < 2 or fields[0] in (b"Z", b"X"):
            continue
        children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


class Reaper:
    def __init__(self, ketch: int, grace: float, report: int | None) -> None:
        self.ketch = ketch
        self.grace = grace
        self.report = report
        self.me = os.getpid()
        self.child = 0
        self.status: int | None = None

    def reap(self) -> None:
        """Collect every child that ended (the command's status among them)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.child:
                self.status = status

    def orphaned(self) -> bool:
        return os.getppid() != self.ketch

    def signal_all(self, sig: int, *, outside_group_only: bool = False) -> list[int]:
        group = os.getpgrp()
        hit: list[int] = []
        for pid in descendants(self.me):
            with contextlib.suppress(OSError):
                if outside_group_only and os.getpgid(pid) == group:
                    continue
                os.kill(pid, sig)
                hit.append(pid)
        return hit

    def kill_all(self) -> None:
        """SIGKILL every descendant until none is left (one forking meanwhile lands here)."""
        while True:
            self.reap()
            if not self.signal_all(signal.SIGKILL):
                self.reap()
                return
            time.sleep(0.01)

    def end_all(self, grace: float) -> None:
        """SIGTERM every descendant, wait up to ``grace``, then SIGKILL what is left."""
        if self.signal_all(signal.SIGTERM):
            self.signal_all(signal.SIGCONT)  # a stopped process cannot act on SIGTERM
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline:
                info = signal.sigtimedwait(WAITED, 0.05)
                self.reap()
                if info is not None and info.si_signo == signal.SIGUSR1:
                    break
                if not descendants(self.me):
                    break
        self.kill_all()

    def say(self, text: str) -> None:
        if self.report is not None:
            with contextlib.suppress(OSError):
                os.write(self.report, text.encode() + b"\n")

    def run(self, argv: list[str]) -> int:
        signal.pthread_sigmask(signal.SIG_BLOCK, WAITED)
        if self.orphaned():
            return 125
        try:
            self.child = os.fork()
        except OSError as exc:
            print(f"could not start the command: {exc}", file=sys.stderr)
            return 126
        if self.child == 0:
            if self.report is not None:
                with contextlib.suppress(OSError):
                    os.close(self.report)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, WAITED)
            try:
                os.execvp(argv[0], argv)
            except OSError as exc:
                print(f"could not start the command: {exc}", file=sys.stderr)
                os._exit(127)
        while self.status is None:
            info = signal.sigtimedwait(WAITED, POLL)
            self.reap()
            if info is not None and info.si_signo == signal.SIGUSR1:
                self.kill_all()
                break
            if info is not None and info.si_signo in STOPS:
                self.signal_all(signal.SIGTERM, outside_group_only=True)
            if self.orphaned():
                self.end_all(0.5)
                break
        if self.status is not None and descendants(self.me):
            self.say("left")
            self.end_all(self.grace)
        self.reap()
        return self.exit(self.status)

    def exit(self, status: int | None) -> int:
        if status is None:
            return 128 + signal.SIGKILL
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            with contextlib.suppress(OSError, ValueError):  # SIGKILL has no handler to reset
                signal.signal(number, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {number})
            os.kill(os.getpid(), number)
            return 128 + number
        return os.waitstatus_to_exitcode(status)


def main(argv: list[str]) -> int:
    usage = "usage: reaper.py KETCH_PID [--grace S] [--report FD] -- ARGV..."
    if "--" not in argv or len(argv) < 3:
        print(usage, file=sys.stderr)
        return 2
    split = argv.index("--")
    head, command = argv[:split], argv[split + 1 :]
    if not command:
        print(usage, file=sys.stderr)
        return 2
    grace, report = 2.0, None
    try:
        ketch = int(head[0])
        options = head[1:]
        while options:
            name, value = options[0], options[1]
            options = options[2:]
            if name == "--grace":
                grace = float(value)
            elif name == "--report":
                report = int(value)
            else:
                raise ValueError(name)
    except (ValueError, IndexError):
        print(usage, file=sys.stderr)
        return 2
    try:
        _subreaper()
    except (OSError, AttributeError) as exc:
        print(f"ketch reaper: {exc}; the command was not run", file=sys.stderr)
        return 126
    return Reaper(ketch, grace, report).run(command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
