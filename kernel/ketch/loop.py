"""The turn: from a prompt to an answer, through as many model calls as it takes.

One turn, as in the design:

1. take in the prompt (``intake``);
2. build the request: a plugin that owns the context budget fits it to the model
   (``ketch_build_request``; it may stop the turn with ``context_overflow`` before any
   request), else the whole active context goes as it is;
3. stream from the provider, turning deltas into events (``streaming``); after a
   failed attempt, wait as long as a plugin says and try again (``ketch_retry_delay``),
   telling consumers to drop a failed attempt's partial output;
4. no tool calls: the turn ends. Otherwise run them (``calls``) and go on;
5. stop at the iteration limit, on cancel, or on an unrecoverable error.

Whatever ends a turn — a provider error, a plugin raising, a store that cannot write,
a cancel — every tool call in the history gets a result and exactly one ``turn_end``
event goes out (an ``error`` event first, when it was an error). The permission
snapshot is taken once per step. History only grows: every change is a new tuple.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from ketch.calls import CANCELLED, CallPipeline, offered_tools
from ketch.errors import ContextOverflow, KetchError
from ketch.events import (
    ErrorEvent,
    MessageEvent,
    NoticeEvent,
    RetryEvent,
    TurnEndEvent,
    TurnStopReason,
    UsageEvent,
)
from ketch.intake import PromptIntake, accept_prompt, deliver_steers
from ketch.messages import (
    Message,
    Part,
    ToolCallPart,
    ToolResultPart,
    Usage,
    new_id,
    pending_tool_calls,
)
from ketch.prompt import join_parts
from ketch.providers import Completed, ErrorKind, ProviderError, ProviderRequest, ToolSpec
from ketch.streaming import StreamOutcome, stream_response

if TYPE_CHECKING:  # pragma: no cover
    from ketch.events import Event
    from ketch.policy import Approver, PermissionSnapshot
    from ketch.session import Session
    from ketch.tools import Tool, ToolResult

__all__ = ["CANCELLED", "Turn", "close_pending_calls", "run_turn", "tool_spec"]

UNKNOWN_OUTCOME = (
    "[ketch] The outcome of this call is unknown: ketch stopped before its result was "
    "recorded. It may or may not have taken effect; check before repeating it."
)
METER_FIELDS = ("context_utilization", "context_tokens", "effective_capacity")
STOPPED = "[ketch] Not run: the turn stopped ({reason}) before this call."
# How many times stop hooks may keep one turn going (Claude Code's cap).
MAX_STOP_CONTINUATIONS = 8


def tool_spec(tool: Tool) -> ToolSpec:
    """The spec the model sees for ``tool``."""
    return ToolSpec(name=tool.name, description=tool.description, input_schema=tool.input_schema())


class _TurnStop(Exception):
    def __init__(self, reason: TurnStopReason, message: str = "") -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


async def run_turn(
    session: Session,
    prompt: str,
    *,
    approver: Approver | None = None,
    parts: tuple[Part, ...] = (),
    allowed_tools: frozenset[str] | None = None,
) -> TurnEndEvent:
    return await Turn(session, approver, allowed_tools=allowed_tools).run(prompt, parts=parts)


def close_pending_calls(
    session: Session,
    output: str = UNKNOWN_OUTCOME,
    *,
    finished: dict[str, ToolResultPart] | None = None,
) -> None:
    """Give every unanswered tool call a result so the history stays valid: the real
    result for those that ``finished``, ``output`` for the rest."""
    pending = pending_tool_calls(session.transcript)
    if not pending:
        return
    done = finished or {}
    results = tuple(
        done.get(c.id) or ToolResultPart(tool_call_id=c.id, name=c.name, ok=False, output=output)
        for c in pending
    )
    message = Message(role="tool", parts=results, synthetic=not done)
    session.append(message)
    session.kernel.emit(session, MessageEvent(message=message))


class Turn:
    def __init__(
        self,
        session: Session,
        approver: Approver | None,
        *,
        allowed_tools: frozenset[str] | None = None,
    ) -> None:
        self.session = session
        self.kernel = session.kernel
        self.loop_settings = self.kernel.settings.loop
        self.max_iterations = int(
            getattr(self.kernel.args, "max_iterations", None) or self.loop_settings.max_iterations
        )
        self.iterations = 0
        self.usage = Usage()
        self.calls = CallPipeline(
            session,
            approver,
            allowed_tools=allowed_tools,
        )
        self.stop_continuations = 0  # how often stop hooks kept this turn going
        self.overflow_retried = False
        self.ended = False
        self._max_output: int | None = None  # the last request's output limit
        self._streaming: StreamOutcome | None = None  # the response being streamed, if any

    @property
    def approver(self) -> Approver | None:
        return self.calls.approver

    def emit(self, event: Event) -> None:
        self.kernel.emit(self.session, event)

    def append(self, message: Message) -> None:
        self.session.append(message)
        self.emit(MessageEvent(message=message))

    # --- the turn -------------------------------------------------------------------

    async def _expand_prompt(self, prompt: str) -> list[Part]:
        """Parts plugins attach to the prompt (``ketch_expand_prompt``); the tool calls they
        make for it are decided and run by the same pipeline as the model's."""
        snapshot = self.session.snapshot()

        async def call_tool(name: str, data: dict[str, Any]) -> ToolResult:
            call = ToolCallPart(id=new_id("prompt_"), name=name, input=data)
            return await self.calls.run_one(call, snapshot)

        intake = PromptIntake(
            call_tool=call_tool,
            notice=lambda text: self.emit(NoticeEvent(level="warning", message=text)),
            has_tool=lambda name: name in self.kernel.tools,
        )
        return await self.kernel.hooks.expand_prompt(self.session, prompt, intake)

    async def run(self, prompt: str, *, parts: tuple[Part, ...] = ()) -> TurnEndEvent:
        try:
            return await self._run(prompt, parts)
        except _TurnStop as stop:
            return self._close(stop.reason, stop.message)
        except ContextOverflow as exc:
            return self._close("context_overflow", exc.message)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            return self._close("cancelled", "", pending_output=CANCELLED, interrupted=True)
        except KetchError as exc:
            return self._close("error", "", error=("ketch", exc.message))
        except Exception as exc:  # noqa: BLE001 - a plugin bug ends the turn, cleanly
            return self._close("error", "", error=("internal", f"{type(exc).__name__}: {exc}"))

    async def _run(self, prompt: str, parts: tuple[Part, ...]) -> TurnEndEvent:
        accepted = await accept_prompt(
            self.session, prompt, steer=False, parts=parts, expand=self._expand_prompt
        )
        if not accepted.ok:
            return self._end("error")
        if accepted.stop:
            return self._end("end_turn", accepted.reason)
        while True:
            if self.iterations >= self.max_iterations:
                self.emit(
                    NoticeEvent(
                        level="warning",
                        message=f"stopped after {self.max_iterations} iterations (--max-iterations)",
                    )
                )
                return self._end("max_iterations")
            self.iterations += 1
            snapshot = self.session.snapshot()
            await deliver_steers(self.session)
            completed = await self._request()
            if await self._handle(completed, snapshot):
                continue
            if await self._stop_hook_continues():
                continue
            if not self.session.steers.empty():
                continue  # the person typed something meanwhile: answer it
            return self._end("end_turn")

    async def _stop_hook_continues(self) -> bool:
        """The Stop hooks run when the model answers without a tool call; a block keeps
        the turn going, and the next call says so (``stop_hook_active``), up to
        :data:`MAX_STOP_CONTINUATIONS` times a turn."""
        if self.stop_continuations >= MAX_STOP_CONTINUATIONS:
            self.emit(
                NoticeEvent(
                    level="warning",
                    message=f"stop hooks kept this turn going {MAX_STOP_CONTINUATIONS} times; it ends now",
                )
            )
            return False
        verdicts = await self.kernel.hooks.values_async(
            "ketch_stop",
            session=self.session,
            event=self._turn_end_event("end_turn"),
            stop_hook_active=self.stop_continuations > 0,
        )
        block = next((v for v in verdicts if v.block), None)
        if block is None:
            return False
        self.stop_continuations += 1
        self.append(
            Message.user(f"[ketch] A stop hook asked to continue: {block.reason}", synthetic=True)
        )
        return True

    def _close(
        self,
        reason: TurnStopReason,
        message: str,
        *,
        error: tuple[str, str] | None = None,
        pending_output: str | None = None,
        interrupted: bool = False,
    ) -> TurnEndEvent:
        """End the turn whatever happened: answer every open call, then one turn_end.

        Calls that finished keep their real results; the rest get ``pending_output``
        (cancelled) or a note that the turn stopped first. Emitting may fail again
        (the store that just failed): the final events still reach the frontends.
        ``interrupted`` (the person cancelled): what the model had streamed of its
        answer is kept, and a note says the turn was interrupted.
        """
        if self.ended:  # pragma: no cover - a second stop while closing
            return self._turn_end_event(reason)
        output = pending_output or STOPPED.format(reason=error[1] if error else reason)
        with contextlib.suppress(Exception):  # closing must not fail the close
            close_pending_calls(self.session, output, finished=self.calls.finished)
            if interrupted:  # what the model had streamed of its answer, for plugins to keep
                streaming = self._streaming
                partial = streaming.text if streaming and streaming.completed is None else ""
                self.kernel.hooks.call(
                    "ketch_turn_interrupted", session=self.session, partial=partial
                )
        if error is not None:
            self._emit_final(ErrorEvent(kind=error[0], retryable=False, message=error[1]))
        return self._end(reason, message)

    def _emit_final(self, event: Event) -> None:
        # An observer that fails again (the store on a full disk) must not stop the
        # final events: the frontends (listeners) get every event regardless.
        with contextlib.suppress(KetchError):
            self.emit(event)

    def _end(self, reason: TurnStopReason, message: str = "") -> TurnEndEvent:
        event = self._turn_end_event(reason)
        if message and reason != "end_turn":
            self._emit_final(NoticeEvent(level="warning", message=message))
        self.ended = True
        self._emit_final(event)
        return event

    def _turn_end_event(self, reason: TurnStopReason) -> TurnEndEvent:
        """The turn's answer is the last assistant text since the person's prompt (steers
        and the loop's own notes do not start a new answer)."""
        text = ""
        for message in reversed(self.session.transcript):
            if message.role == "user" and not message.synthetic:
                break
            if message.role == "assistant" and message.text:
                text = message.text
                break
        return self._with_fields(
            TurnEndEvent(
                text=text,
                stop_reason=reason,
                input_tokens=self.usage.input_tokens,
                output_tokens=self.usage.output_tokens,
                iterations=self.iterations,
            )
        )

    def _with_fields(self, event: Any) -> Any:
        """The event with what plugins add to the kernel's accounting (``ketch_event_fields``:
        a response's cost), never replacing the kernel's own fields."""
        added: dict[str, Any] = {}
        for fields in self.kernel.hooks.values(
            "ketch_event_fields", session=self.session, event=event
        ):
            added.update({k: v for k, v in fields.items() if k not in type(event).model_fields})
        return event.model_copy(update=added) if added else event

    # --- the request ---------------------------------------------------------------------

    def _tools(self) -> list[Any]:
        return offered_tools(self.session, self.calls.allowed_tools)

    async def _fitted(self, overflow: int | None = None) -> ProviderRequest | None:
        """The request a plugin that owns the context budget built (``ketch_build_request``)."""
        request: ProviderRequest | None = await self.kernel.hooks.first_async(
            "ketch_build_request", session=self.session, tools=self._tools(), overflow=overflow
        )
        return request

    def _whole_request(self) -> ProviderRequest:
        """Without a budget: the system prompt, the tools and the whole active context."""
        session = self.session
        config = getattr(session.provider, "config", None)
        return ProviderRequest(
            model=session.model,
            system=join_parts(self.kernel.hooks.system_prompt_parts(session)),
            messages=session.active,
            tools=tuple(tool_spec(t) for t in self._tools()),
            max_output_tokens=self.loop_settings.max_output_tokens
            or getattr(config, "max_output_tokens", None),
        )

    # --- the provider -------------------------------------------------------------------

    def _request_started(self) -> None:
        self.kernel.hooks.call("ketch_request_started", session=self.session)

    async def _request(self) -> Completed:
        request = await self._fitted() or self._whole_request()
        self._max_output = request.max_output_tokens
        # Work that overlaps the request (a store opening concurrently) starts from the
        # event loop's first wait in it, so that it does not compete with the request's
        # own work (building the client, connecting, sending).
        asyncio.get_running_loop().call_soon(self._request_started)
        retried: list[ProviderError] = []  # this request's failures tried again
        while True:
            outcome = self._streaming = StreamOutcome()
            try:
                completed = await stream_response(
                    self.session.provider, request, self.emit, outcome, self.kernel.hooks
                )
            except ProviderError as error:
                if error.kind == ErrorKind.CONTEXT_LENGTH and not self.overflow_retried:
                    self.overflow_retried = True
                    self.emit(
                        ErrorEvent(kind=error.kind.value, retryable=False, message=error.message)
                    )
                    refitted = await self._fitted(error.context_limit or 0)
                    if refitted is None:  # nobody can make room
                        raise _TurnStop("context_overflow", error.message) from None
                    self._retry_event(
                        len(retried) + 1, outcome, "the context was too long: made room"
                    )
                    request = refitted
                    continue
                delay = self.kernel.hooks.first(
                    "ketch_retry_delay", session=self.session, error=error, retried=tuple(retried)
                )
                if delay is not None:
                    retried.append(error)
                    self.emit(
                        ErrorEvent(
                            kind=error.kind.value,
                            retryable=True,
                            message=error.message,
                            retry_in=round(delay, 3),
                        )
                    )
                    await asyncio.sleep(delay)
                    self._retry_event(len(retried), outcome, error.message)
                    continue
                self.emit(
                    ErrorEvent(
                        kind=error.kind.value, retryable=error.retryable, message=error.message
                    )
                )
                reason: TurnStopReason = (
                    "context_overflow" if error.kind == ErrorKind.CONTEXT_LENGTH else "error"
                )
                raise _TurnStop(reason) from None
            self._record_usage(completed)
            return completed

    def _retry_event(self, attempt: int, outcome: StreamOutcome, reason: str) -> None:
        self.emit(RetryEvent(attempt=attempt, discard=outcome.streamed, reason=reason))

    def _record_usage(self, completed: Completed) -> None:
        """Add the usage up and report it, with the context meter a plugin measures
        (``ketch_response_usage``)."""
        session = self.session
        usage = completed.usage
        self.usage = self.usage + usage
        session.usage = session.usage + usage
        meter = self.kernel.hooks.first(
            "ketch_response_usage", session=session, usage=usage, message=completed.message
        )
        event = UsageEvent(
            **usage.model_dump(),  # the event carries every count of the response's usage
            model=session.model,
            provider=session.provider.name,
            **{k: v for k, v in (meter or {}).items() if k in METER_FIELDS},
        )
        self.emit(self._with_fields(event))

    # --- the response ---------------------------------------------------------------------

    async def _handle(self, completed: Completed, snapshot: PermissionSnapshot) -> bool:
        """Keep the response; run its tool calls. True when the turn must go on."""
        message = completed.message
        cut_off = completed.stop_reason == "max_tokens"
        if cut_off:
            # A tool call the limit cut is never run: it leaves the history altogether.
            kept = tuple(
                p for p in message.parts if not (isinstance(p, ToolCallPart) and p.input_error)
            )
            message = message.model_copy(update={"parts": kept})
        self.append(message)
        calls = message.tool_calls
        if calls:
            results = await self.calls.run_step(calls, snapshot)
            self.append(Message(role="tool", parts=tuple(results)))
            self.calls.finished = {}
        if cut_off:
            note = self.kernel.hooks.first(
                "ketch_answer_cut_off", session=self.session, limit=self._max_output
            )
            if note:  # a plugin asks the model to go on
                self.append(Message.user(note, synthetic=True))
                return True
        return bool(calls)
