"""The supervisor of one background run: ``python -m ketch_background.supervisor RUN``.

Started by ``ketch -p … --background`` in a session of its own (``setsid``: no
controlling terminal), it forks once more and the first process exits at once: the
supervisor is then nobody's child (init, or the nearest subreaper, adopts it, so no
launcher — a shell that runs ``/background`` — is left with a zombie), cannot take a
controlling terminal (it leads no session), and leads a process group of its own.
Closing the terminal sends it nothing; it ignores SIGHUP all the same. It

1. takes the run's lock (alive exactly while it holds it) and becomes the *child
   subreaper* (``PR_SET_CHILD_SUBREAPER``): every process the run starts stays its
   descendant, even one that double-forks or calls ``setsid``;
2. starts the worker (``python -m ketch_background.worker``, the session itself) in
   its own process group, hands it the options on stdin, and relays the worker's
   handshake ("session ses_… started", or why it did not) to the launcher;
3. on SIGTERM (``ketch stop``) passes SIGTERM to the worker — whose turn then ends
   ``cancelled``, journaled, every tool's process group ended — and kills it after
   ``[background] stop_grace`` seconds if it has not gone;
4. reaps, while the worker runs, every adopted process that exited (no zombies pile
   up under a long run); once the worker is gone, ends every process still descending
   from it (SIGTERM, then SIGKILL), reaps them, and records the outcome in the run's
   status.

Nothing the worker writes reaches a file: its stderr is read into memory (the last
lines go to the launcher if the run cannot start) and otherwise dropped.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import selectors
import signal
import subprocess
import sys
import time

from ketch_background import registry

PR_SET_CHILD_SUBREAPER = 36
TAIL = 20  # lines of the worker's stderr kept (memory only) for a failed start


def set_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (read from /proc), deepest last."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if fields and fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def reap_zombies() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def reap_adopted(worker: int) -> None:
    """Reap the processes that were adopted (the subreaper's) and have exited, while the
    worker runs: a sandbox's or a hook's orphans would stay zombies until the run ends.
    The worker itself is left to its ``Popen`` (``WNOWAIT`` peeks before reaping)."""
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None or info.si_pid == worker:
            return
        with contextlib.suppress(ChildProcessError):
            os.waitpid(info.si_pid, 0)


def end_everything(me: int) -> int:
    """End every process left below the supervisor; how many there were."""
    left = descendants(me)
    if not left:
        return 0
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            reap_zombies()
            if not descendants(me):
                break
            time.sleep(0.02)
    reap_zombies()
    return len(left)


class Supervisor:
    def __init__(self, run: str) -> None:
        self.run = run
        self.stop_at: float | None = None
        self.killed = False

    def main(self) -> int:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        if os.fork() > 0:  # the double fork: the launcher reaps this process now
            os._exit(0)
        os.setpgid(0, 0)
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        self.lock = registry.hold_lock(self.run)
        set_subreaper()
        me = os.getpid()
        registry.update_status(
            self.run, supervisor_pid=me, supervisor_start=registry.process_start(me)
        )
        request = json.loads(sys.stdin.buffer.readline() or b"{}")
        grace = float(request.get("stop_grace") or 10.0)
        worker = subprocess.Popen(
            [sys.executable, "-m", "ketch_background.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            close_fds=True,
            process_group=0,
        )
        assert worker.stdin is not None and worker.stdout is not None and worker.stderr is not None
        registry.update_status(self.run, worker_pid=worker.pid)
        with contextlib.suppress(OSError):
            worker.stdin.write(json.dumps({"args": request.get("args"), "run": self.run}).encode())
            worker.stdin.write(b"\n")
            worker.stdin.close()
        self.worker = worker
        told = self._relay(worker, grace)
        code = worker.wait()
        reaped = end_everything(me)
        state = "stopped" if self.stop_at is not None else ("finished" if code == 0 else "failed")
        if not told:
            state = "failed"
        registry.update_status(self.run, state=state, exit_code=code, waiting=0, reaped=reaped)
        status = registry.read_status(self.run)
        if status is not None and status.socket:
            with contextlib.suppress(OSError):
                os.unlink(status.socket)
        return 0

    def _stop(self, signum: int, frame: object) -> None:
        if self.stop_at is None:
            self.stop_at = time.monotonic()
        worker = getattr(self, "worker", None)
        if worker is not None and worker.poll() is None:
            with contextlib.suppress(OSError):
                worker.send_signal(signal.SIGTERM)

    def _relay(self, worker: subprocess.Popen[bytes], grace: float) -> bool:
        """Pass the worker's handshake to the launcher; drain its output until it
        ends, killing it once a stop's grace is over. True when it started a session."""
        assert worker.stdout is not None and worker.stderr is not None
        tail: list[bytes] = []
        told = False
        buffer = b""
        selector = selectors.DefaultSelector()
        selector.register(worker.stdout, selectors.EVENT_READ, "out")
        selector.register(worker.stderr, selectors.EVENT_READ, "err")
        # Until the worker is gone (a process it left behind may still hold its pipes).
        while selector.get_map() and worker.poll() is None:
            for key, _ in selector.select(timeout=0.2):
                data = os.read(key.fd, 65536)
                if not data:
                    selector.unregister(key.fileobj)
                    continue
                if key.data == "err":
                    tail = (tail + data.splitlines())[-TAIL:]
                elif not told:
                    buffer += data
                    if b"\n" in buffer:
                        told = self._tell(buffer.split(b"\n", 1)[0] + b"\n")
            reap_adopted(worker.pid)
            overdue = self.stop_at is not None and time.monotonic() - self.stop_at > grace
            if overdue and worker.poll() is None and not self.killed:
                self.killed = True
                with contextlib.suppress(OSError):
                    worker.kill()
        for key in list(selector.get_map().values()):  # what it wrote just before exiting
            os.set_blocking(key.fd, False)
            with contextlib.suppress(OSError):
                data = os.read(key.fd, 65536)
                if key.data == "out" and not told and b"\n" in buffer + data:
                    told = self._tell((buffer + data).split(b"\n", 1)[0] + b"\n")
                elif key.data == "err":
                    tail = (tail + data.splitlines())[-TAIL:]
        selector.close()
        if not told:
            worker.wait()
            lines = [line.decode("utf-8", "replace").strip() for line in tail if line.strip()]
            why = lines[-1] if lines else f"it exited with code {worker.returncode}"
            self._tell(json.dumps({"error": why}).encode() + b"\n")
        return told

    def _tell(self, line: bytes) -> bool:
        with contextlib.suppress(OSError):
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
        with contextlib.suppress(OSError):
            sys.stdout.close()
            os.close(1)
        return b'"session_id"' in line


def main() -> int:
    if len(sys.argv) != 2 or not sys.argv[1].startswith("bg_"):
        print(
            "usage: python -m ketch_background.supervisor RUN (started by ketch --background)",
            file=sys.stderr,
        )
        return 2
    return Supervisor(sys.argv[1]).main()


if __name__ == "__main__":
    sys.exit(main())
