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
within the timeout (the command is then killed, with its whole process group). The
answer is read as soon as the command exits (a background child it left holding
stdout does not hold it up), and its process group is ended then too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ApprovalAnswer, ApprovalRequest

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
        from ketch.api import ApprovalAnswer
        from ketch_process_kit.childenv import child_environment
        from ketch_process_kit.oneshot import run_once

        what = f"{request.call.tool} ({request.summary})" if request.summary else request.call.tool
        done = await run_once(
            ["/bin/sh", "-c", self.command],
            stdin=self.request_json(request),
            cwd=self.workspace,
            env=child_environment(self.environ),
            timeout=self.timeout,
            max_output=MAX_ANSWER,
        )
        if done.code is None and done.problem.startswith("timed out"):
            return self._deny(
                f"the permission prompt command gave no answer within {self.timeout:g} s; denied {what}"
            )
        if done.code is None:
            return self._deny(f"the permission prompt command {done.problem}; denied {what}")
        out, err = done.stdout, done.stderr
        tail = _last_line(err)
        if done.code != 0:
            detail = f" (stderr: {tail})" if tail else ""
            return self._deny(
                f"the permission prompt command failed (exit {done.code}){detail}; denied {what}"
            )
        if done.stdout_cut:
            return self._deny(
                f"the permission prompt command answered more than {MAX_ANSWER:,} bytes; denied {what}"
            )
        answer, problem = parse_answer(out)
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
        from ketch.api import ApprovalAnswer

        self.notice(message)
        return ApprovalAnswer(approved=False)


def parse_answer(out: bytes) -> tuple[dict[str, Any] | None, str]:
    """The answer object, or a description of what was wrong with it. The answer must
    be UTF-8 JSON: an answer with a corrupted byte is no answer (it could be a
    corrupted scope or decision)."""
    from ketch_text_kit.jsonline import LineProblem, parse

    text = out.decode("utf-8", "replace").strip()
    if not text:
        return None, "gave no answer on stdout"
    try:
        answer = parse(out.strip())
    except LineProblem as exc:
        if exc.kind == "not_json":
            return None, f"did not answer with JSON ({text.splitlines()[0][:120]!r})"
        return None, f"answered something that cannot be used ({exc.message})"
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
