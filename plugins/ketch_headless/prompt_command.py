"""``--permission-prompt-command CMD``: a program answers the approval questions.

When a call needs approval in a headless run, ``CMD`` runs (``sh -c``, in the
workspace, with the environment every child gets: ketch's own minus secret-looking
variables) with the request as one JSON object on stdin::

    {"tool": "write_file", "input": {...}, "scope": "write(notes.md)", "reason": "...",
     "session_id": "ses_...", "tool_call_id": "call_...", "summary": "...", "preview": "..."}

and its stdout decides: ``{"decision": "allow" | "deny", "message": "...",
"scope": "once" | "session"}``. ``message`` goes to the model on a deny; ``session``
allows the request's scope for the rest of the session (when it has one). Anything
else denies: no answer, output that is not that JSON, a non-zero exit, or no answer
within the timeout (the command is then killed, with its whole process group).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ketch.policy import ApprovalAnswer, ApprovalRequest

DEFAULT_TIMEOUT = 60.0
ORIGIN = "prompt-command"  # who answers (PermissionEvent.origin, docs/provenance.md)
MAX_ANSWER = 1 << 20  # bytes of stdout read as the answer


class PromptCommand:
    def __init__(
        self,
        command: str,
        *,
        session_id: str,
        workspace: Path,
        environ: dict[str, str],
        timeout: float = DEFAULT_TIMEOUT,
        notice: Callable[[str], None] = lambda message: None,
    ) -> None:
        self.command, self.session_id, self.workspace = command, session_id, workspace
        self.environ, self.timeout, self.notice = environ, timeout, notice

    def request_json(self, request: ApprovalRequest) -> bytes:
        payload = {
            "tool": request.call.tool,
            "input": request.call.input,
            "scope": request.scope,
            "reason": request.reason,
            "session_id": self.session_id,
            "tool_call_id": request.call.id,
            "summary": request.summary,
            "preview": request.preview,
        }
        return json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        from ketch.childenv import child_environment
        from ketch.policy import ApprovalAnswer

        what = f"{request.call.tool} ({request.summary})" if request.summary else request.call.tool
        try:
            proc = await asyncio.create_subprocess_exec(
                "/bin/sh",
                "-c",
                self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.workspace,
                env=child_environment(self.environ),
                start_new_session=True,  # its own process group: a timeout kills all of it
            )
        except OSError as exc:
            return self._deny(
                f"the permission prompt command could not start ({exc.strerror or exc}); denied {what}"
            )
        try:
            out, err = await asyncio.wait_for(
                proc.communicate(self.request_json(request)), self.timeout
            )
        except TimeoutError:
            await _kill(proc)
            return self._deny(
                f"the permission prompt command gave no answer within {self.timeout:g} s; denied {what}"
            )
        except asyncio.CancelledError:
            await _kill(proc)
            raise
        tail = _last_line(err)
        if proc.returncode != 0:
            detail = f" (stderr: {tail})" if tail else ""
            return self._deny(
                f"the permission prompt command failed (exit {proc.returncode}){detail}; denied {what}"
            )
        answer, problem = parse_answer(out[:MAX_ANSWER])
        if problem:
            return self._deny(f"the permission prompt command {problem}; denied {what}")
        assert answer is not None
        if answer["decision"] == "deny":
            message = answer.get("message")
            return ApprovalAnswer(
                approved=False, message=str(message) if message else None, origin=ORIGIN
            )
        remember = "session" if answer.get("scope") == "session" and request.scope else "once"
        return ApprovalAnswer(approved=True, remember=remember, origin=ORIGIN)  # type: ignore[arg-type]

    def _deny(self, message: str) -> ApprovalAnswer:
        from ketch.policy import ApprovalAnswer

        self.notice(message)
        return ApprovalAnswer(approved=False)


def parse_answer(out: bytes) -> tuple[dict[str, Any] | None, str]:
    """The answer object, or a description of what was wrong with it."""
    text = out.decode("utf-8", "replace").strip()
    if not text:
        return None, "gave no answer on stdout"
    try:
        answer = json.loads(text)
    except ValueError:
        return None, f"did not answer with JSON ({text.splitlines()[0][:120]!r})"
    if not isinstance(answer, dict):
        return None, "answered JSON that is not an object"
    if answer.get("decision") not in ("allow", "deny"):
        return None, f'answered decision {answer.get("decision")!r}, not "allow" or "deny"'
    if answer.get("scope", "once") not in ("once", "session"):
        return None, f'answered scope {answer.get("scope")!r}, not "once" or "session"'
    if answer.get("message") is not None and not isinstance(answer.get("message"), str):
        return None, "answered a message that is not a string"
    return answer, ""


def _last_line(data: bytes) -> str:
    lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


async def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(proc.wait(), 5)
