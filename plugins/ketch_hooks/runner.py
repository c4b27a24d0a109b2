"""Running configured hook commands and turning their exits into verdicts."""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ketch.events import NoticeEvent
from ketch.verdicts import HookVerdict

if TYPE_CHECKING:  # pragma: no cover
    from ketch.session import Session

MAX_OUTPUT = 8_000


@dataclass(frozen=True)
class HookRun:
    command: str
    code: int
    stdout: str
    stderr: str


def matches(matcher: str, subject: str | None) -> bool:
    if subject is None or matcher in ("", "*"):
        return True
    try:
        return re.fullmatch(matcher, subject) is not None
    except re.error:
        return matcher == subject


def hook_env(session: Session) -> dict[str, str]:
    """The user's environment minus anything that looks like a secret."""
    from ketch.childenv import child_environment

    return child_environment(os.environ, extra={"KETCH_SESSION_ID": session.id, "KETCH_WORKSPACE": str(session.workspace)})


def run_hooks(session: Session, event: str, payload: dict[str, Any], subject: str | None = None) -> list[HookRun]:
    from ketch_hooks.settings import HooksSettings

    configured = session.kernel.settings.of(HooksSettings).get(event)
    runs: list[HookRun] = []
    body = json.dumps({"event": event, "session_id": session.id, "workspace": str(session.workspace), **payload}, default=str)
    for hook in configured:
        if not matches(hook.matcher, subject):
            continue
        try:
            done = subprocess.run(
                ["/bin/sh", "-c", hook.command], input=body, capture_output=True, text=True,
                timeout=hook.timeout, cwd=session.workspace, env=hook_env(session), errors="replace",
            )
            run = HookRun(hook.command, done.returncode, done.stdout[:MAX_OUTPUT], done.stderr[:MAX_OUTPUT])
        except subprocess.TimeoutExpired:
            run = HookRun(hook.command, -1, "", f"timed out after {hook.timeout:g}s")
        except OSError as exc:
            run = HookRun(hook.command, -1, "", f"could not start: {exc}")
        if run.code not in (0, 2):
            detail = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else f"exit {run.code}"
            session.kernel.emit(session, NoticeEvent(level="warning", message=f"{event} hook `{hook.command}` failed ({detail}); not blocking"))
        runs.append(run)
    return runs


def verdict(runs: list[HookRun], *, context_from_stdout: bool = False) -> HookVerdict | None:
    blocked = [r for r in runs if r.code == 2]
    if blocked:
        reason = "; ".join(r.stderr.strip() or f"`{r.command}` said no" for r in blocked)
        return HookVerdict(block=True, reason=reason)
    if context_from_stdout:
        context = "\n".join(r.stdout.strip() for r in runs if r.code == 0 and r.stdout.strip())
        if context:
            return HookVerdict(context="\n" + context)
    return None
