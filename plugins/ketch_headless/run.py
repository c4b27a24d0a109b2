"""Running one headless turn and printing it in the chosen format."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

from ketch.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ketch.events import Event, TurnEndEvent
    from ketch.kernel import Kernel
    from ketch.policy import ApprovalAnswer, ApprovalRequest
    from ketch.session import Session


def read_prompt(kernel: Kernel) -> str:
    prompt = kernel.args.prompt
    if prompt is None:
        prompt = sys.stdin.read() if not sys.stdin.isatty() else ""
    if not prompt.strip():
        raise UsageError("no prompt: pass -p PROMPT, or pipe the prompt on stdin")
    return str(prompt)


class TextPrinter:
    """``text``: progress on stderr as it happens; the answer on stdout at the end."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err

    def __call__(self, event: Event) -> None:
        kind = event.type
        if kind == "tool_call":
            args = json.dumps(event.input, ensure_ascii=False)  # type: ignore[union-attr]
            self.err.write(f"• {event.name} {args[:300]}\n")  # type: ignore[union-attr]
        elif kind == "permission" and event.decision != "allow":  # type: ignore[union-attr]
            verdict = "approved" if event.approved else "not run"  # type: ignore[union-attr]
            self.err.write(f"  {event.decision}: {event.reason} ({verdict})\n")  # type: ignore[union-attr]
        elif kind == "tool_result" and not event.ok:  # type: ignore[union-attr]
            self.err.write(f"  ✗ {event.output.splitlines()[0][:300] if event.output else 'failed'}\n")  # type: ignore[union-attr]
        elif kind == "tool_result" and event.diff:  # type: ignore[union-attr]
            self.err.write(event.diff if event.diff.endswith("\n") else event.diff + "\n")  # type: ignore[union-attr]
        elif kind == "error":
            retry = f" (retrying in {event.retry_in:.1f}s)" if event.retry_in else ""  # type: ignore[union-attr]
            self.err.write(f"ketch: {event.kind}: {event.message}{retry}\n")  # type: ignore[union-attr]
        elif kind == "notice":
            self.err.write(f"ketch: {event.message}\n")  # type: ignore[union-attr]
        elif kind == "compaction":
            self.err.write(f"ketch: compacted context {event.before_tokens} -> {event.after_tokens} tokens\n")  # type: ignore[union-attr]
        self.err.flush()

    def finish(self, end: TurnEndEvent, session: Session) -> None:
        if end.text:
            self.out.write(end.text if end.text.endswith("\n") else end.text + "\n")
            self.out.flush()
        if end.stop_reason != "end_turn":
            self.err.write(f"ketch: turn ended: {end.stop_reason}\n")


class StreamJsonPrinter:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, event: Event) -> None:
        self.out.write(event.model_dump_json() + "\n")
        self.out.flush()

    def finish(self, end: TurnEndEvent, session: Session) -> None:
        pass


class JsonPrinter:
    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        self.errors: list[dict[str, Any]] = []

    def __call__(self, event: Event) -> None:
        if event.type == "error":
            self.errors.append(event.model_dump(exclude={"ts", "type"}))

    def finish(self, end: TurnEndEvent, session: Session) -> None:
        payload = {
            "session_id": session.id,
            "text": end.text,
            "stop_reason": end.stop_reason,
            "is_error": end.stop_reason != "end_turn",
            "iterations": end.iterations,
            "usage": {"input_tokens": end.input_tokens, "output_tokens": end.output_tokens},
            "model": session.model,
            "errors": self.errors,
        }
        self.out.write(json.dumps(payload, ensure_ascii=False) + "\n")
        self.out.flush()


def terminal_approver() -> Any:
    """Ask on the terminal when there is one; otherwise None (asks are denied)."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    async def approve(request: ApprovalRequest) -> ApprovalAnswer:
        from ketch.policy import ApprovalAnswer

        sys.stderr.write(f"\n{request.call.tool}: {request.summary}\n  {request.reason}\n  allow? [y]es / [n]o / [s]ession: ")
        sys.stderr.flush()
        answer = (await asyncio.to_thread(sys.stdin.readline)).strip().lower()
        if answer in ("y", "yes"):
            return ApprovalAnswer(approved=True)
        if answer in ("s", "session"):
            return ApprovalAnswer(approved=True, remember="session")
        return ApprovalAnswer(approved=False)

    return approve


def store_preflight(kernel: Kernel) -> None:
    """Before the model is called: a store that exists but cannot be opened stops the run
    (the work would silently not be kept), unless ``--no-save``; no store at all is said
    once by the session's notice, and the run goes on unsaved."""
    from ketch.errors import KetchError
    from ketch.storage import StoreUnavailable

    try:
        _ = kernel.store
    except StoreUnavailable as exc:
        if exc.exists and not getattr(kernel.args, "no_save", False):
            raise KetchError(f"{exc.message} (nothing was sent to the model; --no-save runs the turn without saving it)") from None


def run_headless(kernel: Kernel) -> int:
    fmt = kernel.args.output_format
    prompt = read_prompt(kernel)
    store_preflight(kernel)
    printer: Any
    if fmt == "stream-json":
        printer = StreamJsonPrinter(sys.stdout)
    elif fmt == "json":
        printer = JsonPrinter(sys.stdout, sys.stderr)
    else:
        printer = TextPrinter(sys.stdout, sys.stderr)
    session = kernel.open_session([printer])
    approver = terminal_approver() if fmt == "text" else None

    async def turn() -> TurnEndEvent:
        try:
            return await kernel.run_turn(session, prompt, approver=approver)
        finally:
            await session.provider.aclose()

    try:
        end = asyncio.run(turn())
    finally:
        kernel.end(session, "exit")
    printer.finish(end, session)
    return 0 if end.stop_reason == "end_turn" else 1
