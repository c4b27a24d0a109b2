"""Background jobs: servers and watchers the model starts, reads from, and stops.

A job is a process group (``setsid``) whose output a reader thread collects into a
bounded buffer of not-yet-read bytes (the oldest are dropped past the cap, and the
drop is reported). Threads rather than asyncio tasks, because a job outlives the turn
(and, in print mode, the event loop) that started it. Jobs belong to a session: they
are stopped when it ends, and every job is stopped when ketch exits.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ketch_shell.process import forget, group_members, kill_now, register, signal_group

Reporter = Callable[[bool], "str | None"]


@dataclass
class Job:
    id: int
    command: str
    cwd: str
    proc: subprocess.Popen[bytes]
    cap: int
    started: float = field(default_factory=time.time)
    unread: bytearray = field(default_factory=bytearray)
    dropped: int = 0
    total: int = 0
    stopped_by_user: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    changed: threading.Condition = field(init=False)
    reader: threading.Thread | None = None
    reporters: list[Reporter] = field(default_factory=list)  # from the sandbox: what the job met

    def __post_init__(self) -> None:
        self.changed = threading.Condition(self.lock)

    @property
    def pgid(self) -> int:
        return self.proc.pid

    def start_reader(self) -> None:
        self.reader = threading.Thread(target=self._read, name=f"ketch-job-{self.id}", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        fd = stream.fileno()
        try:
            while chunk := os.read(fd, 1 << 16):
                with self.lock:
                    self.total += len(chunk)
                    self.unread += chunk
                    if len(self.unread) > self.cap:
                        extra = len(self.unread) - self.cap
                        del self.unread[:extra]
                        self.dropped += extra
                    self.changed.notify_all()
        except OSError:
            pass
        finally:
            with self.lock:
                self.changed.notify_all()

    def take(self, wait: float = 0.0) -> tuple[bytes, int]:
        """New output since the last take (waiting up to ``wait`` s for some), and bytes dropped."""
        deadline = time.monotonic() + wait
        with self.lock:
            while wait > 0 and not self.unread and self.running:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self.changed.wait(min(remaining, 0.1))
            data, dropped = bytes(self.unread), self.dropped
            self.unread.clear()
            self.dropped = 0
        return data, dropped

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def status(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "running"
        if self.stopped_by_user:
            return "stopped"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with code {code}"

    def notes(self) -> list[str]:
        """What the sandbox saw the job meet since the last call; once it has ended, that is final."""
        ended = not self.running and not group_members(self.pgid)
        found = [reporter(ended) for reporter in self.reporters]
        if ended:
            self.reporters = []
        return [n for n in found if n]

    def stop(self, grace: float) -> None:
        """SIGTERM the group, SIGKILL it after ``grace`` seconds (blocking)."""
        self.stopped_by_user = self.running or self.stopped_by_user
        if signal_group(self.pgid, signal.SIGTERM):
            signal_group(self.pgid, signal.SIGCONT)
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline:
                if self.proc.poll() is not None and not group_members(self.pgid):
                    break
                time.sleep(0.05)
            kill_now(self.pgid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        forget(self.pgid)
        if self.reader is not None:
            self.reader.join(timeout=1)


class JobTable:
    """Every job of every session in this process."""

    def __init__(self) -> None:
        self._jobs: dict[str, dict[int, Job]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def start(
        self,
        session_id: str,
        command: str,
        argv: list[str],
        *,
        cwd: str,
        env: dict[str, str],
        cap: int,
        reporters: list[Reporter] | None = None,
    ) -> Job:
        proc = subprocess.Popen(  # noqa: S603 - the policy approved this command
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
        register(proc.pid, None, argv)
        with self._lock:
            job = Job(next(self._ids), command, cwd, proc, cap, reporters=list(reporters or []))
            self._jobs.setdefault(session_id, {})[job.id] = job
        job.start_reader()
        return job

    def get(self, session_id: str, job_id: int) -> Job | None:
        return self._jobs.get(session_id, {}).get(job_id)

    def of(self, session_id: str) -> list[Job]:
        return list(self._jobs.get(session_id, {}).values())

    def running(self, session_id: str) -> int:
        return sum(1 for job in self.of(session_id) if job.running)

    def stop_session(self, session_id: str, grace: float = 2.0) -> None:
        with self._lock:
            jobs = list(self._jobs.pop(session_id, {}).values())
        for job in jobs:
            job.stop(grace)
            job.notes()  # releases what the sandbox held for it

    def kill_all(self) -> None:
        """At exit: no grace, nothing left behind."""
        for jobs in list(self._jobs.values()):
            for job in jobs.values():
                kill_now(job.pgid)
                for reporter in job.reporters:
                    with contextlib.suppress(Exception):
                        reporter(True)


JOBS = JobTable()
atexit.register(JOBS.kill_all)
