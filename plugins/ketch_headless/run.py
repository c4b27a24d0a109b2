"""Running one headless turn and printing it in the chosen format."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

from ketch.api import KetchError, StashKey, UsageError
from ketch_frontend_kit.sessions import open_session
from ketch_headless.meter import TurnMeter
from ketch_text_kit.terminal import for_terminal, line_for_terminal

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ApprovalAnswer, ApprovalRequest, Approver, Kernel, Session, TurnEndEvent
    from ketch_headless.claude_run import ClaudeRun


def read_prompt(kernel: Kernel) -> str:
    prompt = kernel.args.prompt
    if not prompt:  # no -p, or -p without text (Claude Code's spelling): a piped prompt
        prompt = sys.stdin.read() if not sys.stdin.isatty() else ""
    if not prompt.strip():
        raise UsageError("no prompt: pass -p PROMPT, or pipe the prompt on stdin")
    return str(prompt)


class TextPrinter:
    """``text``: progress on stderr as it happens; the answer on stdout at the end.

    Everything from the model or a tool passes through ``for_terminal`` (escape
    sequences shown, not obeyed) on its way to stderr, and to stdout when that is a
    terminal; ketch's own cursor handling (the waiting line) is written around it."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err

    waiting = False

    def say(self, text: str) -> None:
        self.err.write(for_terminal(text))

    def __call__(self, event: Any) -> None:  # one of ketch.events.Event
        kind = event.type
        if self.waiting and kind != "waiting":
            self.err.write("\r\033[K")
            self.waiting = False
        if kind == "tool_call":
            args = json.dumps(event.input, ensure_ascii=False)  # type: ignore[union-attr]
            self.say(f"• {line_for_terminal(event.name)} {args[:300]}\n")  # type: ignore[union-attr]
        elif kind == "permission" and event.decision != "allow":  # type: ignore[union-attr]
            verdict = "approved" if event.approved else "not run"  # type: ignore[union-attr]
            self.say(f"  {event.decision}: {event.reason} ({verdict})\n")  # type: ignore[union-attr]
        elif kind == "tool_result" and not event.ok:  # type: ignore[union-attr]
            self.say(f"  ✗ {event.output.splitlines()[0][:300] if event.output else 'failed'}\n")  # type: ignore[union-attr]
        elif kind == "tool_result" and event.diff:  # type: ignore[union-attr]
            self.say(event.diff if event.diff.endswith("\n") else event.diff + "\n")  # type: ignore[union-attr]
        elif kind == "error":
            retry = f" (retrying in {event.retry_in:.1f}s)" if event.retry_in else ""  # type: ignore[union-attr]
            self.say(f"ketch: {event.kind}: {event.message}{retry}\n")  # type: ignore[union-attr]
        elif kind == "notice":
            self.say(f"ketch: {event.message}\n")  # type: ignore[union-attr]
        elif kind == "retry":
            dropped = "; its partial output is discarded" if event.discard else ""  # type: ignore[union-attr]
            self.err.write(
                f"ketch: trying the model again (attempt {event.attempt + 1}){dropped}\n"
            )  # type: ignore[union-attr]
        elif kind == "waiting":
            if self.err.isatty():  # one line, rewritten in place; cleared by the next output
                self.err.write(f"\rketch: waiting for the model… {event.elapsed:.0f} s\033[K")  # type: ignore[union-attr]
                self.err.flush()
                self.waiting = True
            return
        elif kind == "compaction":
            self.err.write(
                f"ketch: compacted context {event.before_tokens} -> {event.after_tokens} tokens\n"
            )  # type: ignore[union-attr]
        self.err.flush()

    def finish(self, end: TurnEndEvent, session: Session) -> None:
        if end.text:
            text = end.text if end.text.endswith("\n") else end.text + "\n"
            self.out.write(for_terminal(text) if self.out.isatty() else text)
            self.out.flush()
        if end.stop_reason != "end_turn":
            self.err.write(f"ketch: turn ended: {end.stop_reason}\n")


class StreamJsonPrinter:
    """Every event as one JSON line; each ``turn_end`` also carries the turn's totals."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.meter = TurnMeter()

    def __call__(self, event: Any) -> None:  # one of ketch.events.Event
        self.meter(event)
        if event.type == "turn_end":
            line = {
                **event.model_dump(mode="json"),
                **self.meter.totals(event, self.meter.finish(event)),
            }  # type: ignore[arg-type]
            self.out.write(json.dumps(line, ensure_ascii=False) + "\n")
        else:
            self.out.write(event.model_dump_json() + "\n")
        self.out.flush()

    def start(self) -> None:
        self.meter.start()

    def finish(self, end: TurnEndEvent, session: Session) -> None:
        pass


class JsonPrinter:
    """``json``: one object at the end, ketch's fields and Claude Code's ``result``
    fields side by side (``jq -r .result`` prints the answer)."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        self.errors: list[dict[str, Any]] = []
        self.meter = TurnMeter()

    def __call__(self, event: Any) -> None:  # one of ketch.events.Event
        self.meter(event)
        if event.type == "error":
            self.errors.append(event.model_dump(exclude={"ts", "type"}))
        elif event.type == "notice" and event.level == "warning":
            self.err.write(f"ketch: {event.message}\n")  # stdout stays one JSON object
            self.err.flush()

    def start(self) -> None:
        self.meter.start()

    def finish(self, end: TurnEndEvent, session: Session) -> None:
        cost = self.meter.finish(end)
        totals = self.meter.totals(end, cost)
        payload = {
            "type": "result",
            **totals,
            "result": end.text,
            "session_id": session.id,
            "text": end.text,
            "stop_reason": end.stop_reason,
            "iterations": end.iterations,
            "model": session.model,
            "errors": self.errors,
            # Unknown price: null, never made up (Claude Code's total_cost_usd likewise).
            "cost_usd": round(cost, 6) if cost is not None else None,
            "total_cost_usd": totals.get("total_cost_usd"),
        }
        self.out.write(json.dumps(payload, ensure_ascii=False) + "\n")
        self.out.flush()


def terminal_approver() -> Any:
    """Ask on the terminal when there is one; otherwise None (asks are denied)."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    async def approve(request: ApprovalRequest) -> ApprovalAnswer:
        from ketch.api import ApprovalAnswer

        asker = f" (subagent {request.agent})" if getattr(request, "agent", None) else ""
        question = f"\n{request.call.tool}{asker}: {request.summary}\n  {request.reason}\n"
        sys.stderr.write(for_terminal(question) + "  allow? [y]es / [n]o / [s]ession: ")
        sys.stderr.flush()
        answer = (await asyncio.to_thread(sys.stdin.readline)).strip().lower()
        if answer in ("y", "yes"):
            return ApprovalAnswer(approved=True, origin="person")
        if answer in ("s", "session"):
            return ApprovalAnswer(approved=True, remember="session", origin="person")
        return ApprovalAnswer(approved=False, origin="person")

    return approve


def choose_approver(kernel: Kernel, session: Session, *, interactive: bool) -> Approver | None:
    """Who answers an ask: ``--permission-prompt-command``, else the terminal (text
    output with a TTY), else a plugin's ``headless_approver`` (a person elsewhere),
    else no one (asks are denied)."""
    command = getattr(kernel.args, "permission_prompt_command", None)
    if command:
        from ketch.api import NoticeEvent
        from ketch_headless.prompt_command import PromptCommand

        return PromptCommand(
            command,
            session_id=session.id,
            workspace=session.workspace,
            environ=kernel.environ,
            timeout=prompt_timeout(kernel),
            notice=lambda message: kernel.emit(
                session, NoticeEvent(level="warning", message=message)
            ),
        )
    approver = terminal_approver() if interactive else None
    if approver is None and kernel.hooks.implemented("headless_approver"):
        # No one here can answer: a plugin may hand the question to a person elsewhere
        # (the background plugin: whoever attaches). None: asks are denied.
        approver = kernel.hooks.first("headless_approver", kernel=kernel, session=session)
    return approver


def prompt_timeout(kernel: Kernel) -> float:
    """``--permission-prompt-timeout``, else ``[headless] permission_prompt_timeout``, else 60 s."""
    from ketch_headless.prompt_command import DEFAULT_TIMEOUT

    value = getattr(kernel.args, "permission_prompt_timeout", None)
    where = f"--permission-prompt-timeout {value}"
    if value is None:
        value = kernel.settings.section("headless").get(
            "permission_prompt_timeout", DEFAULT_TIMEOUT
        )
        where = f"[headless] permission_prompt_timeout = {value!r}"
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = -1.0
    if isinstance(value, bool) or not seconds > 0:
        raise UsageError(
            f"{where}: the permission prompt timeout must be a positive number of seconds"
        )
    return seconds


# Set when this frontend asked the kernel to open the store concurrently.
CONCURRENT_STORE = StashKey[bool]()


def open_store(kernel: Kernel) -> None:
    """A new session's store opens while the first request is under way
    (the store plugin's ``store_open_concurrently``): nothing is written before the first event
    anyway, and what a store that cannot open means is decided before any tool runs
    (:func:`store_gate`) and after the turn. Resuming reads the store first: it opens now."""
    if getattr(kernel.args, "resume", None) or getattr(kernel.args, "continue_session", False):
        store_preflight(kernel)
        return
    kernel.hooks.call("store_open_concurrently", kernel=kernel)
    kernel.stash[CONCURRENT_STORE] = True


def store_preflight(kernel: Kernel) -> None:
    """Before the model is called: a store that exists but cannot be opened stops the run
    (the work would silently not be kept), unless ``--no-save``; no store at all is said
    once by the session's notice, and the run goes on unsaved."""
    from ketch.api import StoreUnavailable

    try:
        _ = kernel.store
    except StoreUnavailable as exc:
        if exc.exists and not getattr(kernel.args, "no_save", False):
            raise KetchError(
                f"{exc.message} (nothing was sent to the model; --no-save runs the turn without saving it)"
            ) from None


def store_failure(kernel: Kernel) -> str | None:
    """Why this run's work cannot be kept, when it must be: a store that exists but
    cannot be opened (the work would silently not be kept), unless ``--no-save``. None:
    it is open, or there is none to open (the run goes on unsaved, said once by the
    session's notice). Waits for a store opening concurrently."""
    from ketch_store_kit.keeping import cannot_keep

    if not kernel.stash.get(CONCURRENT_STORE):
        return None
    return cannot_keep(kernel)


def store_gate(kernel: Kernel) -> None:
    """Before a tool runs: stop the turn when the store cannot keep it."""
    problem = store_failure(kernel)
    if problem:
        raise KetchError(
            f"{problem} (the turn stopped before any tool ran; --no-save runs it without saving it)"
        )


def claude_schema(kernel: Kernel) -> bool:
    """Whether output follows Claude Code's message schema (``--stream-schema claude``,
    the ``ketch-claude`` command)."""
    return getattr(kernel.args, "stream_schema", None) == "claude"


def make_printer(kernel: Kernel, fmt: str) -> Any:
    if claude_schema(kernel) and fmt in ("stream-json", "json"):
        from ketch_headless.claude_stream import ClaudeStreamPrinter

        args = kernel.args
        return ClaudeStreamPrinter(
            sys.stdout,
            kernel,
            partial=bool(getattr(args, "include_partial_messages", False)),
            replay=bool(getattr(args, "replay_user_messages", False)),
            emit_lines=fmt == "stream-json",
        )
    if fmt == "stream-json":
        return StreamJsonPrinter(sys.stdout)
    if fmt == "json":
        return JsonPrinter(sys.stdout, sys.stderr)
    return TextPrinter(sys.stdout, sys.stderr)


def run_headless(kernel: Kernel) -> int:
    from ketch_headless.claude_run import prepare

    fmt = kernel.args.output_format
    if getattr(kernel.args, "permission_prompt_command", None):
        prompt_timeout(kernel)  # a bad timeout is a usage error before any session starts
    claude = prepare(kernel)  # Claude Code's options: checked and said before anything runs
    if getattr(kernel.args, "input_format", "text") == "stream-json":
        return run_stream_json_input(kernel, fmt, claude)
    prompt = read_prompt(kernel)
    open_store(kernel)
    printer = make_printer(kernel, fmt)
    session = open_session(kernel, [printer])
    if hasattr(printer, "bind"):
        printer.bind(session, claude.turn_tools)
    approver = choose_approver(kernel, session, interactive=fmt == "text")

    async def turn() -> TurnEndEvent:
        try:
            if hasattr(printer, "start"):
                printer.start()
            return await claude.run_prompt(session, prompt, approver)
        finally:
            await session.provider.aclose()

    from ketch_frontend_kit.signals import run_cancellable

    try:
        outcome = run_cancellable(turn)
    finally:
        kernel.end(session, "exit")
    if outcome.value is not None:
        printer.finish(outcome.value, session)
    if outcome.exit_code is not None:
        return outcome.exit_code
    ended = outcome.value is not None and outcome.value.stop_reason == "end_turn"
    unsaved = store_failure(kernel) if ended else None
    if unsaved:
        raise KetchError(f"{unsaved} (this run was not saved; --no-save runs it without saving it)")
    return 0 if outcome.value is not None and outcome.value.stop_reason == "end_turn" else 1


def run_stream_json_input(kernel: Kernel, fmt: str, claude: ClaudeRun) -> int:
    """``--input-format stream-json``: a session of turns read from stdin (see stream_input)."""
    from ketch_headless.stream_input import run_stream_input

    if fmt != "stream-json":
        raise UsageError("--input-format stream-json needs --output-format stream-json")
    if kernel.args.prompt:
        raise UsageError(
            "--input-format stream-json reads the prompts from stdin; drop the -p PROMPT text"
        )
    if sys.stdin.isatty():
        raise UsageError("--input-format stream-json reads JSON lines from stdin; pipe them in")
    printer = make_printer(kernel, fmt)
    session = open_session(kernel, [printer])
    if hasattr(printer, "bind"):
        printer.bind(session, claude.turn_tools)
    try:
        return run_stream_input(
            kernel,
            session,
            printer,
            choose_approver(kernel, session, interactive=False),
            claude=claude,
        )
    finally:
        kernel.end(session, "exit")
