"""Running hook commands: asynchronously, side by side, bounded in time and output.

Each matching hook of an event starts as its own process (``asyncio`` subprocesses:
the turn's event loop is never blocked), in its own process group, in the workspace,
with the child environment every process ketch starts gets (no secret-looking
variables; ``CLAUDE_PROJECT_DIR`` and ``KETCH_*`` added). The event's JSON goes to
its stdin. A hook still running at its timeout is killed with its whole group and
its output discarded; stdout and stderr are kept up to :data:`MAX_OUTPUT` bytes each.
A hook is done when its process exits, whatever it left running (a background child
holding stdout open does not hold up the answer); its group is ended then too
(``ketch_process_kit.oneshot``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ketch_hooks.matching import matches

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session
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
    from ketch_process_kit.childenv import child_environment

    extra = {
        "CLAUDE_PROJECT_DIR": str(session.workspace),
        "KETCH_SESSION_ID": session.id,
        "KETCH_WORKSPACE": str(session.workspace),
        "KETCH_HOOK_EVENT": event,
    }
    return child_environment(session.kernel.environ, extra=extra)


def configured(session: Session, event: str) -> list[HookCommand]:
    """The event's configured hooks, then those other plugins add now (``hooks_extra``:
    an installed Claude Code plugin's, the pinned ones only)."""
    from pydantic import ValidationError

    from ketch_hooks.settings import HookCommand, HooksSettings

    found = list(session.kernel.settings.of(HooksSettings).get(event))
    for plugin, tables in session.kernel.hooks.call("hooks_extra", session=session, event=event):
        for table in tables:
            try:
                found.append(HookCommand.model_validate(table))
            except ValidationError as exc:
                session.kernel.pm.record_failure(plugin, "hooks_extra", exc, closed=False)
    return found


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
    from ketch_hooks.trust import allowed

    hooks = [
        h
        for h in configured(session, event)
        if matches(h.matcher, names) and allowed(session, event, h)
    ]
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
    from ketch_process_kit.oneshot import run_once

    argv, refused = hook.argv()  # ${CLAUDE_PLUGIN_ROOT} expanded, or not run at all
    if argv is None:
        return HookRun(hook, None, problem=refused)
    done = await run_once(
        argv,
        stdin=body,
        cwd=cwd,
        env={**env, **hook.environment()},
        timeout=hook.timeout,
        max_output=MAX_OUTPUT,
    )
    if done.code is None:
        return HookRun(hook, None, problem=done.problem)
    return HookRun(
        hook, done.code, _text(done.stdout, done.stdout_cut), _text(done.stderr, done.stderr_cut)
    )


def _text(data: bytes, cut: int) -> str:
    return data.decode("utf-8", errors="replace") + (CUT.format(n=MAX_OUTPUT) if cut else "")
