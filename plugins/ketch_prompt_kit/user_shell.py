"""Running a command the person asked for (``!command`` in the shell, a trusted Markdown
command's ``!`` line): in their own shell, in the workspace, with the person's
authority, so not through the policy (the model proposed nothing).

It gets the same environment rule as every process ketch starts (no credential-looking
variables), no terminal input (stdin is empty), and its own process group, which is
stopped with it when the person cancels or the timeout passes. Output (stdout and
stderr together) is kept up to a cap, head and tail.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MAX_OUTPUT = 30_000  # characters kept for the transcript and the model (head and tail)


@dataclass(frozen=True)
class UserCommandResult:
    command: str
    output: str  # capped, head and tail
    exit_code: int | None  # None: stopped (cancelled or timed out)
    cut: int = 0  # characters left out of the middle
    timed_out: bool = False

    def transcript_text(self) -> str:
        """How the command and its outcome are recorded and shown to the model."""
        status = (
            "timed out"
            if self.timed_out
            else ("stopped" if self.exit_code is None else f"exit code {self.exit_code}")
        )
        cut = f"\n[{self.cut:,} characters of output left out]" if self.cut else ""
        body = self.output.rstrip("\n")
        return (
            f"$ {self.command}\n{body}{cut}\n[{status}]"
            if body
            else f"$ {self.command}\n(no output)\n[{status}]"
        )


def user_shell() -> str:
    """The person's shell ($SHELL), else bash, else sh."""
    chosen = os.environ.get("SHELL") or ""
    if chosen and os.path.isabs(chosen) and os.access(chosen, os.X_OK):
        return chosen
    return shutil.which("bash") or "/bin/sh"


async def run_user_command(
    command: str,
    cwd: Path,
    *,
    on_output: Callable[[str], None] | None = None,
    timeout: float | None = None,
) -> UserCommandResult:
    from ketch_process_kit.childenv import child_environment

    process = await asyncio.create_subprocess_exec(
        user_shell(),
        "-c",
        command,
        cwd=str(cwd),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=child_environment(os.environ),
        start_new_session=True,
    )
    head: list[str] = []
    tail: list[str] = []
    kept = cut = 0
    half = MAX_OUTPUT // 2

    async def pump() -> None:
        nonlocal kept, cut
        assert process.stdout is not None
        while chunk := await process.stdout.read(4096):
            text = chunk.decode("utf-8", "replace")
            if on_output is not None:
                on_output(text)
            if kept < half:
                head.append(text)
                kept += len(text)
            else:
                tail.append(text)
                size = sum(len(t) for t in tail)
                while size > half and tail:
                    dropped = tail.pop(0)
                    size -= len(dropped)
                    cut += len(dropped)

    timed_out = False
    try:
        await asyncio.wait_for(pump(), timeout)
        code: int | None = await process.wait()
    except TimeoutError:
        timed_out, code = True, None
        await _stop(process)
    except asyncio.CancelledError:
        await _stop(process)
        raise
    return UserCommandResult(command, "".join(head) + "".join(tail), code, cut, timed_out)


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Stop the command's whole process group: TERM, then KILL after two seconds."""
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        try:
            await asyncio.wait_for(process.wait(), wait)
            return
        except TimeoutError:
            continue
