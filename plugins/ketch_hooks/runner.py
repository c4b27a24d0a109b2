"""Running hook commands: asynchronously, side by side, bounded in time and output.

Each matching hook of an event starts as its own process (``asyncio`` subprocesses:
the turn's event loop is never blocked), in its own process group, in the workspace,
with the child environment every process ketch starts gets (no secret-looking
variables; ``CLAUDE_PROJECT_DIR`` and ``KETCH_*`` added). The event's JSON goes to
its stdin. A hook still running at its timeout is killed with its whole group and
its output discarded; stdout and stderr are kept up to :data:`MAX_OUTPUT` bytes each.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ketch_hooks.matching import matches

if TYPE_CHECKING:  # pragma: no cover
    from ketch.session import Session
    from ketch_hooks.settings import HookCommand

MAX_OUTPUT = 64 * 1024  # bytes kept of each of stdout and stderr
CUT = "\n[ketch: output cut at {n} bytes]"


@dataclass(frozen=True)
class HookRun:
    hook: HookCommand
    code: int | None  # None: it did not finish (timed out, could not start)
    stdout: str = ""
    stderr: str = ""
    problem: str = ""  # why there is no exit code

    @property
    def label(self) -> str:
        return self.hook.label


def hook_env(session: Session, event: str) -> dict[str, str]:
    """ketch's environment minus anything that looks like a secret, plus where and what."""
    from ketch.childenv import child_environment

    extra = {
        "CLAUDE_PROJECT_DIR": str(session.workspace),
        "KETCH_SESSION_ID": session.id,
        "KETCH_WORKSPACE": str(session.workspace),
        "KETCH_HOOK_EVENT": event,
    }
    return child_environment(session.kernel.environ, extra=extra)


def configured(session: Session, event: str) -> list[HookCommand]:
    from ketch_hooks.settings import HooksSettings

    return session.kernel.settings.of(HooksSettings).get(event)


async def run_event(
    session: Session,
    event: str,
    payload: Callable[[HookCommand], dict[str, Any]],
    names: tuple[str, ...] | None = None,
    *,
    detach: Callable[[Any], None] | None = None,
) -> list[HookRun]:
    """Run every hook of ``event`` whose matcher accepts ``names``, all at once, and
    return their runs in configuration order. ``payload(hook)`` is the JSON each gets.
    ``async`` hooks are handed to ``detach`` (started, never waited for)."""
    hooks = [h for h in configured(session, event) if matches(h.matcher, names)]
    if not hooks:
        return []
    env = hook_env(session, event)
    waited = []
    for hook in hooks:
        body = json.dumps(payload(hook), default=str, ensure_ascii=False).encode("utf-8")
        run = run_command(hook, body, str(session.workspace), env)
        if hook.background and detach is not None:
            detach(run)
        else:
            waited.append(run)
    return list(await asyncio.gather(*waited))


async def run_command(hook: HookCommand, body: bytes, cwd: str, env: dict[str, str]) -> HookRun:
    argv, refused = hook.argv()  # ${CLAUDE_PLUGIN_ROOT} expanded, or not run at all
    if argv is None:
        return HookRun(hook, None, problem=refused)
    env = {**env, **hook.environment()}
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,  # its own process group: a timeout kills all of it
        )
    except OSError as exc:
        return HookRun(hook, None, problem=f"could not start ({exc.strerror or exc})")
    try:
        out, err, code = await asyncio.wait_for(_communicate(proc, body), hook.timeout)
    except TimeoutError:
        await _kill(proc)
        return HookRun(hook, None, problem=f"timed out after {hook.timeout:g} s")
    except BaseException:
        await asyncio.shield(_kill(proc))
        raise
    return HookRun(hook, code, _text(out), _text(err))


async def _communicate(proc: asyncio.subprocess.Process, body: bytes) -> tuple[bytes, bytes, int]:
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    async def feed() -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(body)  # type: ignore[union-attr]
            await proc.stdin.drain()  # type: ignore[union-attr]
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.close()  # type: ignore[union-attr]

    _, out, err = await asyncio.gather(feed(), _read_capped(proc.stdout), _read_capped(proc.stderr))
    return out, err, await proc.wait()


async def _read_capped(stream: asyncio.StreamReader) -> bytes:
    """Everything up to MAX_OUTPUT; the rest is read and dropped (the hook must not
    stall on a full pipe)."""
    kept = bytearray()
    dropped = False
    while chunk := await stream.read(65536):
        room = MAX_OUTPUT - len(kept)
        if room > 0:
            kept += chunk[:room]
        dropped = dropped or len(chunk) > room
    return bytes(kept) + (CUT.format(n=MAX_OUTPUT).encode() if dropped else b"")


async def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        await proc.wait()


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
