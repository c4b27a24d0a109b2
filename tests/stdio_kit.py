"""Driving a stdio frontend process with raw lines (what no SDK client would send).

``StdioProcess`` starts a command with binary pipes, writes whatever bytes a test
gives it, and collects stdout lines on a thread, so a test can wait for one answer
with a deadline and fail (instead of hanging) when the process stops answering.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any


class NoAnswer(AssertionError):
    pass


class StdioProcess:
    def __init__(
        self, argv: list[str], *, cwd: Path, env: dict[str, str], stderr_path: Path
    ) -> None:
        self.stderr_path = stderr_path
        self._stderr = open(stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            start_new_session=True,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.seen: list[bytes] = []
        self._deaf = threading.Event()
        self._pumped = threading.Thread(target=self._pump, daemon=True)
        self._pumped.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        buffer = b""
        while not self._deaf.is_set():
            ready, _, _ = select.select([fd], [], [], 0.05)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                self.lines.put(line + b"\n")
        if buffer and not self._deaf.is_set():
            self.lines.put(buffer)
        self.lines.put(None)

    def stop_reading(self) -> None:
        """Close our end of the process's stdout, as an editor that vanished would."""
        self._deaf.set()
        self._pumped.join()
        assert self.proc.stdout is not None
        self.proc.stdout.close()

    # --- writing ---------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        self.write(json.dumps(message).encode() + b"\n")

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()

    # --- reading ---------------------------------------------------------------------

    def next_line(self, timeout: float) -> bytes | None:
        """The next stdout line (None: stdout closed); NoAnswer after ``timeout``."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise NoAnswer(f"no output within {timeout:g} s") from None
        if line is not None:
            self.seen.append(line)
        return line

    def next_json(self, timeout: float) -> Any:
        line = self.next_line(timeout)
        if line is None:
            raise NoAnswer("stdout closed")
        return json.loads(line)

    def until(self, match: Any, timeout: float = 30) -> tuple[Any, list[Any]]:
        """Read JSON lines until ``match(value)``: (that value, everything before it)."""
        deadline = time.monotonic() + timeout
        before: list[Any] = []
        while True:
            value = self.next_json(max(0.01, deadline - time.monotonic()))
            if match(value):
                return value, before
            before.append(value)

    # --- ending ------------------------------------------------------------------------

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise NoAnswer(f"still running {timeout:g} s later") from None

    def signal(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def stderr(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(Exception):
                stream.close()  # type: ignore[union-attr]
        self._stderr.close()

    def __enter__(self) -> StdioProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def processes_with(marker: str) -> list[int]:
    """Pids of live processes whose command line contains ``marker`` (zombies left out)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def wait_started(marker: str, timeout: float = 60) -> bool:
    """Whether a process with ``marker`` in its command line appeared within ``timeout``."""
    deadline = time.monotonic() + timeout
    while not processes_with(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def wait_gone(marker: str, timeout: float = 10) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left
