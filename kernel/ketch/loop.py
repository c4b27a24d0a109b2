"""The turn loop: the only place where a decision turns into an effect.

One turn, as in the design:

1. build the request within the effective capacity (compact first if needed; stop with
   ``context_overflow`` if protected content alone does not fit, before any request);
2. offer only the tools the mode allows (plan mode offers no mutating tool);
3. stream from the provider, turning deltas into events; retry classified retryable
   errors with backoff honouring retry-after;
4. no tool calls: the turn ends. Otherwise, for each call in order: resolve the tool
   for the mode (a mutating call in plan mode is refused structurally), validate the
   input, combine the policy votes (deny > ask > allow; no vote = ask), ask the
   approver on ask (none = denied), journal the dispatch (``tool_started``), run it,
   and feed the result back; a tool error never ends the turn;
5. stop at the iteration limit, on cancel, or on an unrecoverable provider error.

The permission snapshot is taken once per step. History only grows: every change is
a new tuple.
"""

from __future__ import annotations

import asyncio
import inspect
import random
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ketch.context import (
    RequestSize,
    calibrate,
    compact,
    context_budget,
    effective_capacity,
    estimate_schemas,
    estimate_text,
    estimator_for,
    learn_capacity,
    learn_provider_window,
    plausible,
    reported_input_tokens,
    split_turns,
    utilization,
    window_and_reserve,
)
from ketch.events import (
    ErrorEvent,
    MessageEvent,
    NoticeEvent,
    PermissionEvent,
    ReasoningDeltaEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
    ToolStartedEvent,
    TurnEndEvent,
    TurnStopReason,
    UsageEvent,
    UserPromptEvent,
)
from ketch.intake import PromptIntake
from ketch.messages import (
    Message,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    new_id,
    pending_tool_calls,
)
from ketch.policy import ApprovalRequest, PermissionSnapshot, ProposedCall, Vote, combine_votes
from ketch.prompt import PromptPart, join_parts
from ketch.providers import (
    Completed,
    ErrorKind,
    Notice,
    ProviderError,
    ProviderRequest,
    ReasoningDelta,
    TextDelta,
    ToolSpec,
)
from ketch.tools import Access, Tool, ToolContext, ToolFilter, ToolResult

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Awaitable, Callable

    from ketch.events import Event
    from ketch.policy import Approver
    from ketch.session import Session

CUT_OFF_NOTE = (
    "[ketch] Your previous answer was cut off by the output-token limit{detail}. It is not "
    "finished. Continue from where it stopped; if you were writing a tool call, send it "
    "again in smaller pieces."
)
UNKNOWN_OUTCOME = (
    "[ketch] The outcome of this call is unknown: ketch stopped before its result was "
    "recorded. It may or may not have taken effect; check before repeating it."
)
CANCELLED = "[ketch] Cancelled by the user before this call finished."


def backoff_delay(attempt: int, retry_after: float | None, *, cap: float = 60.0) -> float | None:
    """Seconds to wait before retry number ``attempt`` (0-based), or None: do not retry.

    A server hint (retry-after) wins when 0 < hint <= cap; a larger hint means the
    server wants us gone for longer than is sensible to block a turn. Otherwise
    exponential backoff, 0.5 s doubling up to 8 s, with jitter (as the official SDKs).
    """
    if retry_after is not None:
        if 0 < retry_after <= cap:
            return retry_after
        if retry_after > cap:
            return None
    return min(0.5 * 2**attempt, 8.0) * (1 - 0.25 * random.random())


class _TurnStop(Exception):
    def __init__(self, reason: TurnStopReason, message: str = "") -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


async def run_turn(session: Session, prompt: str, *, approver: Approver | None = None, tool_filter: ToolFilter | None = None) -> TurnEndEvent:
    return await Turn(session, approver, tool_filter).run(prompt)


def close_pending_calls(session: Session, output: str = UNKNOWN_OUTCOME) -> None:
    """Give every unanswered tool call a synthetic result so the history stays valid."""
    pending = pending_tool_calls(session.transcript)
    if not pending:
        return
    results = tuple(
        ToolResultPart(tool_call_id=c.id, name=c.name, ok=False, output=output) for c in pending
    )
    message = Message(role="tool", parts=results, synthetic=True)
    session.append(message)
    session.kernel.emit(session, MessageEvent(message=message))


class Turn:
    def __init__(self, session: Session, approver: Approver | None, tool_filter: ToolFilter | None = None) -> None:
        self.session = session
        self.kernel = session.kernel
        self.approver = approver
        self.tool_filter = tool_filter  # narrows this turn's tools (a command's allowed-tools)
        settings = self.kernel.settings
        self.loop_settings = settings.loop
        self.compaction_settings = settings.compaction
        self.max_iterations = int(getattr(self.kernel.args, "max_iterations", None) or self.loop_settings.max_iterations)
        self.iterations = 0
        self.usage = Usage()
        self.recent_calls: list[str] = []  # for the duplicate-call breaker
        self.stop_hook_used = False
        self.overflow_retried = False

    def emit(self, event: Event) -> None:
        self.kernel.emit(self.session, event)

    def append(self, message: Message) -> None:
        self.session.append(message)
        self.emit(MessageEvent(message=message))

    # --- the turn -------------------------------------------------------------------

    async def run(self, prompt: str) -> TurnEndEvent:
        try:
            if not await self._accept_prompt(prompt, steer=False):
                return self._end("error", "")
            while True:
                if self.iterations >= self.max_iterations:
                    self.emit(NoticeEvent(level="warning", message=f"stopped after {self.max_iterations} iterations (--max-iterations)"))
                    return self._end("max_iterations")
                self.iterations += 1
                snapshot = self.session.snapshot()
                await self._deliver_steers()
                completed = await self._request(snapshot)
                if not await self._handle(completed, snapshot):
                    verdicts = self.kernel.hooks.stop(self.session, self._turn_end_event("end_turn"))
                    block = next((v for v in verdicts if v.block), None)
                    if block and not self.stop_hook_used:
                        self.stop_hook_used = True
                        self.append(Message.user(f"[ketch] A stop hook asked to continue: {block.reason}", synthetic=True))
                        continue
                    if not self.session.steers.empty():
                        continue  # the user typed something meanwhile: answer it
                    return self._end("end_turn")
        except _TurnStop as stop:
            return self._end(stop.reason, stop.message)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            close_pending_calls(self.session, CANCELLED)
            return self._end("cancelled")

    async def _accept_prompt(self, prompt: str, *, steer: bool) -> bool:
        verdicts = self.kernel.hooks.user_prompt_submit(self.session, prompt)
        blocked = [v for v in verdicts if v.block]
        if blocked:
            reason = "; ".join(v.reason for v in blocked if v.reason) or "blocked by a hook"
            self.emit(ErrorEvent(kind="blocked", retryable=False, message=f"prompt blocked: {reason}"))
            return False
        self.emit(UserPromptEvent(text=prompt, steer=steer))
        parts: list[Part] = [TextPart(text=prompt)]
        if not steer:
            parts += await self._expand_prompt(prompt)
        parts += [TextPart(text=v.context) for v in verdicts if v.context]
        self.append(Message(role="user", parts=tuple(parts)))
        return True

    async def _expand_prompt(self, prompt: str) -> list[Part]:
        """Parts plugins attach to the prompt (``ketch_expand_prompt``); the tool calls they
        make for it run through the same path as the model's."""
        snapshot = self.session.snapshot()

        async def call_tool(name: str, data: dict[str, Any]) -> ToolResult:
            call = ToolCallPart(id=new_id("prompt_"), name=name, input=data)
            self.emit(ToolCallEvent(id=call.id, name=call.name, input=call.input, summary=self._call_summary(call)))
            result, outcome = await self._decide_and_run(call, snapshot, filtered=False)
            self.emit(ToolResultEvent(tool_call_id=call.id, name=name, ok=result.ok, output=result.output, diff=result.diff, outcome=outcome))  # type: ignore[arg-type]
            return result

        intake = PromptIntake(call_tool=call_tool, notice=lambda text: self.emit(NoticeEvent(level="warning", message=text)), has_tool=lambda name: name in self.kernel.tools)
        parts: list[Part] = []
        for value in self.kernel.hooks.expand_prompt(self.session, prompt, intake):
            try:
                found = await value if inspect.isawaitable(value) else value
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - an attachment plugin's bug must not lose the prompt
                self.emit(NoticeEvent(level="warning", message=f"a prompt expansion failed ({type(exc).__name__}: {exc}); the prompt was sent without it"))
                continue
            parts += [p for p in found or () if getattr(p, "type", None)]  # message parts (text, images)
        return parts

    async def _deliver_steers(self) -> None:
        while not self.session.steers.empty():
            await self._accept_prompt(self.session.steers.get_nowait(), steer=True)

    def _end(self, reason: TurnStopReason, message: str = "") -> TurnEndEvent:
        event = self._turn_end_event(reason)
        if message and reason != "end_turn":
            self.emit(NoticeEvent(level="warning", message=message))
        self.emit(event)
        return event

    def _turn_end_event(self, reason: TurnStopReason) -> TurnEndEvent:
        """The turn's answer is the last assistant text since the user's prompt (steers and
        the loop's own notes do not start a new answer)."""
        text = ""
        for message in reversed(self.session.transcript):
            if message.role == "user" and not message.synthetic:
                break
            if message.role == "assistant" and message.text:
                text = message.text
                break
        return TurnEndEvent(
            text=text,
            stop_reason=reason,
            input_tokens=self.usage.input_tokens,
            output_tokens=self.usage.output_tokens,
            iterations=self.iterations,
        )

    # --- tools offered ------------------------------------------------------------------

    def offered_tools(self, snapshot: PermissionSnapshot) -> list[Tool]:
        tools = [t for t in self.kernel.tools.values() if self.tool_filter is None or t.name in self.tool_filter.tools]
        if snapshot.mode == "plan":
            return [t for t in tools if not t.mutating]
        return tools

    # --- context ---------------------------------------------------------------------------

    # A compaction the provider's overflow error asked for, run when the next request is built.
    _pending_compaction: tuple[str, int, str | None] | None = None
    # The size of the request just built, to read the provider's reported tokens against.
    _request_size: RequestSize | None = None

    def _window(self) -> tuple[int, int | None]:
        window, reserve, _ = window_and_reserve(self.session)
        return window, reserve

    def _system(self, specs: tuple[ToolSpec, ...]) -> tuple[str, list[PromptPart], int]:
        """The system prompt, its parts, and the tokens it and the tool schemas take."""
        parts = self.kernel.hooks.system_prompt_parts(self.session)
        system = join_parts(parts)
        estimator = estimator_for(self.session)
        fixed = estimator.text(system) + estimator.schemas(s.model_dump() for s in specs)
        return system, parts, fixed

    async def _build_request(self, snapshot: PermissionSnapshot) -> ProviderRequest:
        session = self.session
        settings = self.compaction_settings
        tools = self.offered_tools(snapshot)
        specs = tuple(ToolSpec(name=t.name, description=t.description, input_schema=t.input_schema()) for t in tools)
        await learn_provider_window(session)
        capacity = context_budget(session).capacity
        system, parts, fixed = self._system(specs)
        pending = self._pending_compaction
        if pending is not None:
            self._pending_compaction = None
            reason, limit, instructions = pending
            limit = min(limit, capacity)
            messages = estimator_for(session).messages(session.active)
            # The provider said it does not fit, whatever the estimate says: at least halve.
            target = min(int(settings.target * limit), fixed + messages // 2)
            if await compact(session, reason, system_tokens=fixed, capacity=limit, target_tokens=target, instructions=instructions):
                system, parts, fixed = self._system(specs)
        projected = fixed + estimator_for(session).messages(session.active)
        if projected > settings.trigger * capacity and await compact(session, "auto", system_tokens=fixed, capacity=capacity):
            system, parts, fixed = self._system(specs)
            projected = fixed + estimator_for(session).messages(session.active)
        if projected > capacity:
            self._overflow(system, specs, fixed, capacity, parts=parts)
        self._request_size = estimator_for(session).request(system, [s.model_dump() for s in specs], session.active)
        max_out = self._window()[1] or self.loop_settings.max_output_tokens
        return ProviderRequest(
            model=session.model,
            system=system,
            messages=session.active,
            tools=specs,
            max_output_tokens=max_out,
        )

    def _compact(self, reason: str, fixed: int, capacity: int, instructions: str | None = None) -> bool:
        """Arrange a compaction before the next request is built (``_build_request`` runs
        it, where a model summarizer can be awaited). ``capacity`` below the usual one
        (a provider's overflow error named its limit) is remembered for the session.
        True when a compactor is loaded to do it."""
        if not self.kernel.pm.hook.ketch_compact.get_hookimpls():
            return False
        learn_capacity(self.session, capacity)
        self._pending_compaction = (reason, capacity, instructions)
        return True

    def _overflow(self, system: str, specs: tuple[ToolSpec, ...], fixed: int, capacity: int, *, parts: list[PromptPart] | None = None) -> None:
        """Stop before any request: protected content alone does not fit. Say what takes room."""
        session = self.session
        estimator = estimator_for(session)
        spans = split_turns(session.active)
        pinned_ids = set(session.pins)
        recent = spans[-self.compaction_settings.keep_recent_turns :] if spans else []
        recent_ids = {i for span in recent for i in span.ids}
        pinned = [m for span in spans if pinned_ids.intersection(span.ids) and not recent_ids.intersection(span.ids) for m in session.active[span.start : span.end]]
        recent_tokens = sum(estimator.messages(session.active[s.start : s.end]) for s in recent)
        pinned_tokens = estimator.messages(pinned)
        system_tokens = estimator.text(system)
        schema_tokens = fixed - system_tokens
        total = fixed + estimator.messages(session.active)
        other = total - fixed - recent_tokens - pinned_tokens
        sizes = sorted(((estimator.text(p.render()), p.title or p.source or "untitled") for p in parts or [] if p.text.strip()), reverse=True)
        largest = ", ".join(f"{title} ~{tokens:,}" for tokens, title in sizes[:3])
        breakdown = (
            f"system prompt ~{system_tokens:,} tokens" + (f" (largest: {largest})" if largest else "")
            + f", tool schemas ~{schema_tokens:,} ({len(specs)} tools), pinned ~{pinned_tokens:,}, "
            f"recent ~{recent_tokens:,}, other ~{max(other, 0):,}; total ~{total:,} of an effective capacity of {capacity:,}"
        )
        remedies = []
        if pinned_tokens:
            remedies.append("unpin turns (/unpin)")
        if recent_tokens > capacity // 2:
            remedies.append("send a shorter message, or ask for less output at once")
        if system_tokens > capacity // 4:
            remedies.append("shorten the instruction files or the project memory")
        if schema_tokens > capacity // 4:
            remedies.append("disable tools or plugins you do not need (--no-plugin NAME)")
        remedies += ["start a new session", "use a model with a larger context window (context_window in config.toml)"]
        raise _TurnStop(
            "context_overflow",
            "the context does not fit the model even after compaction: " + breakdown + ". Remedies: " + "; ".join(remedies) + ".",
        )

    # --- the provider -------------------------------------------------------------------

    async def _request(self, snapshot: PermissionSnapshot) -> Completed:
        request = await self._build_request(snapshot)
        attempt = 0
        while True:
            try:
                completed = await self._stream(request)
            except ProviderError as error:
                if error.kind == ErrorKind.CONTEXT_LENGTH and not self.overflow_retried:
                    self.overflow_retried = True
                    self.emit(ErrorEvent(kind=error.kind.value, retryable=False, message=error.message))
                    window, reserve = self._window()
                    capacity = effective_capacity(error.context_limit or window, reserve)
                    fixed = estimate_text(request.system) + estimate_schemas(s.input_schema for s in request.tools)
                    if self._compact("overflow", fixed, capacity):
                        request = await self._build_request(snapshot)
                        continue
                    raise _TurnStop("context_overflow", error.message) from None
                delay = backoff_delay(attempt, error.retry_after) if error.retryable else None
                if error.retryable and attempt < self.loop_settings.max_retries and delay is not None:
                    self.emit(ErrorEvent(kind=error.kind.value, retryable=True, message=error.message, retry_in=round(delay, 3)))
                    await asyncio.sleep(delay)
                    attempt += 1
                    continue
                self.emit(ErrorEvent(kind=error.kind.value, retryable=error.retryable, message=error.message))
                reason: TurnStopReason = "context_overflow" if error.kind == ErrorKind.CONTEXT_LENGTH else "error"
                raise _TurnStop(reason) from None
            self._record_usage(completed)
            return completed

    async def _stream(self, request: ProviderRequest) -> Completed:
        completed: Completed | None = None
        try:
            async for item in self.session.provider.stream(request):
                if isinstance(item, TextDelta):
                    if item.text:
                        self.emit(TextDeltaEvent(text=item.text))
                elif isinstance(item, ReasoningDelta):
                    if item.text:
                        self.emit(ReasoningDeltaEvent(text=item.text))
                elif isinstance(item, Notice):
                    self.emit(NoticeEvent(level="warning", message=item.message))
                elif isinstance(item, Completed):
                    completed = item
        except ProviderError:
            raise
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a provider plugin bug: classify, never crash the loop
            raise ProviderError(ErrorKind.SERVER, f"provider '{self.session.provider.name}' failed: {type(exc).__name__}: {exc}") from exc
        if completed is None:
            raise ProviderError(ErrorKind.MALFORMED_STREAM, "the provider's stream ended without a complete response (truncated)", retryable=True)
        return completed

    def _record_usage(self, completed: Completed) -> None:
        """Add the usage up and report the meter: the active context over effective capacity.

        The active context after a response is the request just sent plus the answer.
        The request's size is what the provider reported when that is plausible (it also
        calibrates the estimator), else the estimate.
        """
        session = self.session
        usage = completed.usage
        self.usage = self.usage + usage
        session.usage = session.usage + usage
        capacity = context_budget(session).capacity
        size = self._request_size
        reported = reported_input_tokens(usage.input_tokens, usage.cached_tokens)
        if size is not None:
            calibrate(session, size, reported)
            request_tokens = reported if plausible(size, reported) else estimator_for(session).units(size.units) + size.overhead
        else:
            request_tokens = reported or estimator_for(session).messages(session.active)
        context_tokens = request_tokens + estimator_for(session).message(completed.message)
        session.last_input_tokens = context_tokens
        self.emit(
            UsageEvent(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cached_tokens=usage.cached_tokens,
                context_utilization=utilization(context_tokens, capacity),
                context_tokens=context_tokens,
                effective_capacity=capacity,
            )
        )

    # --- the response ---------------------------------------------------------------------

    async def _handle(self, completed: Completed, snapshot: PermissionSnapshot) -> bool:
        """Keep the response; run its tool calls. True when the turn must go on."""
        message = completed.message
        cut_off = completed.stop_reason == "max_tokens"
        if cut_off:
            # A tool call the limit cut is never run: it leaves the history altogether.
            kept = tuple(p for p in message.parts if not (isinstance(p, ToolCallPart) and p.input_error))
            message = message.model_copy(update={"parts": kept})
        self.append(message)
        calls = message.tool_calls
        if calls:
            results = [await self._run_call(call, snapshot) for call in calls]
            self.append(Message(role="tool", parts=tuple(results)))
        if cut_off:
            limit = self._window()[1]
            detail = f" ({limit} tokens)" if limit else ""
            self.emit(NoticeEvent(level="warning", message="the model's answer was cut off by the output-token limit; asking it to continue"))
            self.append(Message.user(CUT_OFF_NOTE.format(detail=detail), synthetic=True))
            return True
        return bool(calls)

    async def _run_call(self, call: ToolCallPart, snapshot: PermissionSnapshot) -> ToolResultPart:
        self.emit(ToolCallEvent(id=call.id, name=call.name, input=call.input, summary=self._call_summary(call)))
        result, outcome = await self._decide_and_run(call, snapshot)
        self.emit(
            ToolResultEvent(tool_call_id=call.id, name=call.name, ok=result.ok, output=result.output, diff=result.diff, outcome=outcome)  # type: ignore[arg-type]
        )
        return ToolResultPart(tool_call_id=call.id, name=call.name, ok=result.ok, output=result.output)

    def _refuse(self, call: ToolCallPart, text: str) -> tuple[ToolResult, str]:
        return ToolResult.error(text), "refused"

    async def _decide_and_run(self, call: ToolCallPart, snapshot: PermissionSnapshot, *, filtered: bool = True) -> tuple[ToolResult, str]:
        session = self.session
        if call.input_error:
            return self._refuse(call, f"[ketch] The arguments of this call were not valid JSON ({call.input_error}); it was not run. Send it again with valid JSON arguments.")
        tool = self.kernel.tools.get(call.name)
        if tool is None:
            offered = ", ".join(t.name for t in self.offered_tools(snapshot)) or "none"
            return self._refuse(call, f"[ketch] There is no tool named '{call.name}'. Tools available: {offered}.")
        refusal = self.tool_filter.refusal(call.name, call.input) if filtered and self.tool_filter is not None else None
        if refusal:
            return self._refuse(call, f"[ketch] {refusal}; it was not run. Do without it, or ask the user.")
        if snapshot.mode == "plan" and tool.mutating:
            return self._refuse(call, f"[ketch] '{call.name}' changes things, and this session is in plan mode, where only read-only tools may run. It was not run. Propose the change in your answer instead; the user can switch to build mode.")
        try:
            args = tool.input_model.model_validate(call.input)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()[:8])
            return self._refuse(call, f"[ketch] Invalid input for '{call.name}': {problems}. Fix the arguments and call it again.")
        key = f"{call.name}\x00{call.canonical_input()}"
        streak = 0
        for previous in reversed(self.recent_calls):
            if previous != key:
                break
            streak += 1
        self.recent_calls.append(key)
        if streak + 1 >= self.loop_settings.duplicate_call_limit and not tool.repeatable:
            return self._refuse(call, f"[ketch] You have made this exact call {streak + 1} times in a row; it was not run again. Its result will not change: use the earlier result, or try something different.")
        ctx = self._tool_context(call, snapshot, tool)
        try:
            accesses = tuple(tool.accesses(args, ctx))
        except Exception as exc:  # noqa: BLE001 - a tool bug must not bypass policy
            return self._refuse(call, f"[ketch] '{call.name}' could not describe what it would touch ({type(exc).__name__}: {exc}); it was not run.")
        proposed = ProposedCall(
            id=call.id, tool=tool.name, input=call.input, effects=tool.effects, mutating=tool.mutating, accesses=accesses, plugin=tool.plugin
        )
        allowed, message = await self._authorize(proposed, snapshot, summary=self._summary(tool, args), preview=lambda: self._preview(tool, args, ctx))
        if not allowed:
            return ToolResult.error(message), "refused"
        verdicts = self.kernel.hooks.before_tool_use(session, proposed)
        blocked = [v for v in verdicts if v.block]
        if blocked:
            reason = "; ".join(v.reason for v in blocked if v.reason) or "blocked by a hook"
            return ToolResult.error(f"[ketch] Blocked by a hook: {reason}"), "blocked"
        self.emit(ToolStartedEvent(tool_call_id=call.id, name=call.name, input=call.input))
        try:
            result = await tool.run(args, ctx)
            if not isinstance(result, ToolResult):
                result = ToolResult.error(f"[ketch] Tool '{call.name}' returned {type(result).__name__}, not a result")
        except asyncio.CancelledError:
            ctx.cancelled.set()
            self.emit(ToolResultEvent(tool_call_id=call.id, name=call.name, ok=False, output=CANCELLED, outcome="cancelled"))
            raise
        except Exception as exc:  # noqa: BLE001 - a tool never raises into the loop
            result = ToolResult.error(f"[ketch] Tool '{call.name}' failed: {type(exc).__name__}: {exc}")
        notes = self.kernel.hooks.after_tool_use(session, proposed, result)
        if notes:
            result = result.model_copy(update={"output": result.output + "\n\n" + "\n".join(notes)})
        # Last, so a filter (secret redaction) sees everything the model, journal and screen will.
        result = self.kernel.hooks.tool_result(session, proposed, result)
        return result, ("succeeded" if result.ok else "failed")

    def _call_summary(self, call: ToolCallPart) -> str:
        """The one line shown for a call (the full command line for shell), when it validates."""
        tool = self.kernel.tools.get(call.name)
        if tool is None or call.input_error:
            return ""
        try:
            return self._summary(tool, tool.input_model.model_validate(call.input))
        except ValidationError:
            return ""

    def _summary(self, tool: Tool, args: Any) -> str:
        try:
            return tool.summary(args)
        except Exception:  # noqa: BLE001
            return args.model_dump_json()

    def _tool_context(self, call: ToolCallPart, snapshot: PermissionSnapshot, tool: Tool) -> ToolContext:
        async def authorize(access: Access) -> bool:
            proposed = ProposedCall(
                id=call.id, tool=tool.name, input=call.input, effects=frozenset({access.effect}) | tool.effects,
                mutating=tool.mutating, accesses=(access,), plugin=tool.plugin,
            )
            allowed, _ = await self._authorize(proposed, snapshot, summary=f"{access.effect.value} {access.target}")
            return allowed

        return ToolContext(
            workspace=self.session.workspace,
            session_id=self.session.id,
            settings=self.kernel.settings,
            state=self.session.state,
            authorize=authorize,
            emit=self.emit,
            tool_call_id=call.id,
            hooks=self.kernel.hooks,
        )

    async def _preview(self, tool: Tool, args: Any, ctx: ToolContext) -> str | None:
        try:
            return await tool.preview(args, ctx)
        except Exception as exc:  # noqa: BLE001 - a preview bug must not hide the prompt
            return f"(no preview: {type(exc).__name__}: {exc})"

    async def _authorize(
        self, proposed: ProposedCall, snapshot: PermissionSnapshot, *, summary: str, preview: Callable[[], Awaitable[str | None]] | None = None
    ) -> tuple[bool, str]:
        """Combine the votes and, on ask, consult the approver. Returns (allowed, message)."""
        votes = self.kernel.hooks.policy_votes(proposed, snapshot, self.session)
        missing = [name for name, info in self.kernel.pm.infos.items() if info.essential and info.status != "ok"]
        if missing:
            votes.append(Vote(decision="ask", reason=f"essential plugin(s) {', '.join(missing)} not loaded", plugin="kernel"))
        vote = combine_votes(votes)
        if vote.decision == "deny":
            self.emit(PermissionEvent(tool_call_id=proposed.id, decision="deny", reason=vote.reason))
            return False, f"[ketch] Permission denied: {vote.reason or 'a policy rule denies this'}. Do not retry it; choose another way or ask the user."
        if vote.decision == "allow":
            self.emit(PermissionEvent(tool_call_id=proposed.id, decision="allow", reason=vote.reason))
            return True, ""
        if self.approver is None:
            self.emit(PermissionEvent(tool_call_id=proposed.id, decision="ask", reason=vote.reason, approved=False))
            return False, (
                f"[ketch] This needs the user's approval ({vote.reason or 'no rule allows it'}), and no one can approve it in "
                "this mode, so it was not run. Ask the user to allow it, or do without it."
            )
        shown = await preview() if preview is not None else None
        answer = await self.approver(ApprovalRequest(call=proposed, reason=vote.reason, summary=summary, scope=vote.scope, preview=shown))
        scope = vote.scope if answer.approved and answer.remember != "once" else None
        if scope and answer.remember == "session" and scope not in self.session.approvals:
            self.session.approvals.append(scope)
        self.emit(PermissionEvent(tool_call_id=proposed.id, decision="ask", reason=vote.reason, approved=answer.approved, scope=scope if answer.remember == "always" else None))
        if answer.approved:
            return True, ""
        note = f" The user said: {answer.message}" if answer.message else ""
        return False, f"[ketch] The user declined this call.{note}"
