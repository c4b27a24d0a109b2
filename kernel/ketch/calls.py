"""The per-call pipeline: the only place where a proposed tool call becomes an effect.

For each call of a response, in order: resolve the tool (a mutating tool in a
read-only mode is refused, structurally), validate the input, let plugins refuse it
before the votes (``ketch_refuse_call``: a loop of identical calls), ask every policy
plugin (deny > ask > allow; no vote means ask; a missing essential plugin asks), let
``ketch_before_tool_use`` hooks weigh in before anyone is asked (a hook's deny always
wins; its allow turns only a soft ask into a run; a changed input is validated and
voted on again), ask the approver on ask (no approver: denied), let
``ketch_before_tool_effect`` hooks act (a checkpoint of the workspace), journal the
dispatch (``tool_started``), run, append the after-hooks' notes, and pass the result
through the result filters. A tool error never ends the turn: it is the result the
model gets.

A plugin may run a response's calls side by side (``ketch_run_calls``: the
``concurrent_calls`` plugin runs read-only ones together); each is still decided here,
in order, one at a time, and results always go back to the model in call order.
Without such a plugin every call runs alone, in order.

A hook that asks to end the turn (``HookVerdict.stop``, Claude Code's ``continue:
false``) before a call refuses it; after a call, the step finishes and the turn ends.
A tool that declares the capability ``DELEGATES`` (it runs a turn of its own on the
person's behalf: an agent) can ask :func:`running_call` which session, approver and tool
narrowing its call runs under, and passes exactly those on. Other tools get None:
they have no approver, and their only door back to policy is ``ctx.authorize``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ketch.events import (
    NoticeEvent,
    PermissionEvent,
    ToolCallEvent,
    ToolOutputEvent,
    ToolResultEvent,
    ToolStartedEvent,
)
from ketch.messages import ToolCallPart, ToolResultPart
from ketch.policy import (
    ApprovalRequest,
    Decision,
    PermissionSnapshot,
    ProposedCall,
    Vote,
    combine_votes,
)
from ketch.stash import Stash
from ketch.tools import DELEGATES, Access, Effect, Tool, ToolContext, ToolResult

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Awaitable, Callable

    from ketch.policy import Approver
    from ketch.session import Session

CANCELLED = "[ketch] Cancelled by the user before this call finished."
STOPPED_BY_HOOK = "[ketch] Not run: a hook ended the turn ({reason})."
NOT_DECIDED = "[ketch] Not run: ketch did not decide this call in this step."


def offered_tools(session: Session, allowed: Iterable[str] | None = None) -> list[Tool]:
    """The tools offered in the session's mode (a read-only mode offers no mutating
    tool), narrowed to ``allowed`` names when the turn is restricted."""
    tools = list(session.kernel.tools.values())
    if session.read_only:
        tools = [t for t in tools if not t.mutating]
    if allowed is not None:
        names = set(allowed)
        tools = [t for t in tools if t.name in names]
    return tools


@dataclass(frozen=True)
class RunningCall:
    """What a running tool acts under: its session, the call, the turn's approver and
    the turn's tool narrowing. A tool that runs a turn of its own on the person's behalf
    (a subagent) passes exactly these on, so it never has more authority than the turn."""

    session: Session
    call_id: str
    approver: Approver | None
    allowed_tools: frozenset[str] | None


_RUNNING: ContextVar[RunningCall | None] = ContextVar("ketch_running_call", default=None)


def running_call() -> RunningCall | None:
    """The call whose delegating tool is running in this task (None outside the
    ``run`` of a tool that declares the ``DELEGATES`` capability)."""
    return _RUNNING.get()


@dataclass
class Ready:
    """A call that may run: everything the run needs, decided."""

    call: ToolCallPart
    tool: Tool
    args: Any
    ctx: ToolContext
    proposed: ProposedCall


@dataclass
class Refused:
    result: ToolResult
    outcome: str = "refused"  # refused | blocked


@dataclass
class CallPipeline:
    session: Session
    approver: Approver | None
    allowed_tools: frozenset[str] | None = None  # the turn's narrowing (a command's allowed-tools)
    stash: Stash = field(default_factory=Stash)  # the turn's: plugin state across its calls
    finished: dict[str, ToolResultPart] = field(default_factory=dict)  # this step's results so far
    stop_reason: str | None = None  # a hook ended the turn: the step finishes, nothing more runs
    # What ``decide`` allowed in this step and has not run yet: the only Readys ``finish`` runs.
    issued: list[Ready] = field(default_factory=list)

    @property
    def kernel(self) -> Any:
        return self.session.kernel

    def emit(self, event: Any) -> None:
        self.kernel.emit(self.session, event)

    # --- a step -------------------------------------------------------------------------

    async def run_step(
        self, calls: list[ToolCallPart], snapshot: PermissionSnapshot
    ) -> list[ToolResultPart]:
        """Run one response's calls (side by side where a plugin runs them so:
        ``ketch_run_calls``); the results in call order."""
        self.finished, self.issued = {}, []
        await self.kernel.hooks.first_async(
            "ketch_run_calls",
            session=self.session,
            calls=calls,
            decide=lambda call: self._decide_announced(call, snapshot),
            finish=self._finish,
        )
        for call in calls:  # no plugin ran them (or one failed): each alone, in order
            if call.id not in self.finished:
                await self._one(call, snapshot)
        if self.stop_reason is not None:
            self._end_turn_for_hook()
        return [self.finished[c.id] for c in calls]

    def _stopped(self) -> Refused:
        return Refused(ToolResult.error(STOPPED_BY_HOOK.format(reason=self.stop_reason)), "blocked")

    def _end_turn_for_hook(self) -> None:
        from ketch.loop import _TurnStop  # the loop's own way to end a turn; it closes the step

        self.emit(
            NoticeEvent(level="warning", message=f"a hook ended the turn: {self.stop_reason}")
        )
        raise _TurnStop("end_turn", self.stop_reason or "")

    async def _one(self, call: ToolCallPart, snapshot: PermissionSnapshot) -> ToolResult:
        return await self._finish(call, await self._decide_announced(call, snapshot))

    async def run_one(self, call: ToolCallPart, snapshot: PermissionSnapshot) -> ToolResult:
        """Decide and run one call outside a response (a plugin's, for the prompt): the
        same pipeline and events; its result goes to the caller, not the history."""
        result = await self._one(call, snapshot)
        del self.finished[call.id]
        return result

    async def _decide_announced(
        self, call: ToolCallPart, snapshot: PermissionSnapshot
    ) -> Ready | Refused:
        self.emit(
            ToolCallEvent(
                id=call.id, name=call.name, input=call.input, summary=self._call_summary(call)
            )
        )
        if self.stop_reason is not None:
            return self._stopped()
        decided = await self.decide(call, snapshot)
        if isinstance(decided, Ready):
            self.issued.append(decided)
        return decided

    async def _finish(self, call: ToolCallPart, decided: Ready | Refused) -> ToolResult:
        if isinstance(decided, Refused):
            result, outcome = decided.result, decided.outcome
        elif any(ready is decided and ready.call is call for ready in self.issued):
            self.issued = [ready for ready in self.issued if ready is not decided]  # runs once
            result, outcome = await self.execute(decided)
        else:  # fail closed: a Ready ``decide`` did not hand out (a plugin's own) never runs
            result, outcome = ToolResult.error(NOT_DECIDED), "refused"
        self._record(call, result, outcome)
        return result

    def _record(self, call: ToolCallPart, result: ToolResult, outcome: str) -> None:
        """A call's end: its result event, and its result for the model."""
        self.emit(
            ToolResultEvent(
                tool_call_id=call.id,
                name=call.name,
                ok=result.ok,
                output=result.output,
                diff=result.diff,
                outcome=outcome,
            )
        )  # type: ignore[arg-type]
        self.finished[call.id] = ToolResultPart(
            tool_call_id=call.id,
            name=call.name,
            ok=result.ok,
            output=result.output,
            images=tuple(result.images),
        )

    # --- deciding -------------------------------------------------------------------------

    def resolve(self, call: ToolCallPart, snapshot: PermissionSnapshot) -> Tool | Refused:
        if call.input_error:
            return Refused(
                ToolResult.error(
                    f"[ketch] The arguments of this call were not valid JSON ({call.input_error}); it was not run. Send it again with valid JSON arguments."
                )
            )
        tool = self.kernel.tools.get(call.name)
        offered = offered_tools(self.session, self.allowed_tools)
        if tool is None or (self.allowed_tools is not None and tool.name not in self.allowed_tools):
            names = ", ".join(t.name for t in offered) or "none"
            return Refused(
                ToolResult.error(
                    f"[ketch] There is no tool named '{call.name}' in this turn. Tools available: {names}."
                )
            )
        if self.kernel.read_only_mode(snapshot.mode) and tool.mutating:
            return Refused(
                ToolResult.error(
                    f"[ketch] '{call.name}' changes things, and this session is in {snapshot.mode} mode, where only "
                    "read-only tools may run. It was not run. Propose the change in your answer instead; the user can switch modes."
                )
            )
        return tool

    def validate(self, tool: Tool, raw: dict[str, Any]) -> Any:
        try:
            return tool.input_model.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}"
                for e in exc.errors()[:8]
            )
            return Refused(
                ToolResult.error(
                    f"[ketch] Invalid input for '{tool.name}': {problems}. Fix the arguments and call it again."
                )
            )

    def _propose(
        self, call: ToolCallPart, tool: Tool, args: Any, ctx: ToolContext, raw: dict[str, Any]
    ) -> ProposedCall | Refused:
        try:
            accesses = tuple(tool.accesses(args, ctx))
        except Exception as exc:  # noqa: BLE001 - a tool bug must not bypass policy
            return Refused(
                ToolResult.error(
                    f"[ketch] '{call.name}' could not describe what it would touch ({type(exc).__name__}: {exc}); it was not run."
                )
            )
        return _proposed(call, tool, raw, accesses)

    def votes(self, proposed: ProposedCall, snapshot: PermissionSnapshot) -> Vote:
        votes = self.kernel.hooks.policy_votes(proposed, snapshot, self.session)
        missing = [
            name
            for name, info in self.kernel.pm.infos.items()
            if info.essential and info.status != "ok"
        ]
        if missing:
            votes.append(
                Vote(
                    decision="ask",
                    reason=f"essential plugin(s) {', '.join(missing)} not loaded",
                    plugin="kernel",
                    hard=True,
                    origin="kernel",
                )
            )
        return combine_votes(votes)

    async def decide(self, call: ToolCallPart, snapshot: PermissionSnapshot) -> Ready | Refused:
        tool = self.resolve(call, snapshot)
        if isinstance(tool, Refused):
            return tool
        args = self.validate(tool, call.input)
        if isinstance(args, Refused):
            return args
        refusals = self.kernel.hooks.values(
            "ketch_refuse_call", session=self.session, call=call, tool=tool, turn=self.stash
        )
        if refusals:
            return Refused(ToolResult.error(refusals[0]))
        ctx = self._tool_context(call, snapshot, tool)
        proposed = self._propose(call, tool, args, ctx, call.input)
        if isinstance(proposed, Refused):
            return proposed
        vote = self.votes(proposed, snapshot)
        if vote.decision == "deny":
            return self._denied(proposed, vote)
        verdicts = await self.kernel.hooks.before_tool_use(self.session, proposed, vote.decision)
        self._show_messages(verdicts)
        stopper = next((v for v in verdicts if v.stop), None)
        if stopper is not None:
            self.stop_reason = stopper.stop_reason or stopper.reason or "a hook asked to stop"
            why = f"a hook ended the turn: {self.stop_reason}"
            return self._blocked(proposed, stopper, why, self._stopped())
        denial = next((v for v in verdicts if v.denies), None)
        if denial is not None:
            reason = denial.reason or "blocked by a hook"
            blocked = Refused(ToolResult.error(f"[ketch] Blocked by a hook: {reason}"), "blocked")
            return self._blocked(proposed, denial, f"a hook denied it: {reason}", blocked)
        updated = next((v.updated_input for v in verdicts if v.updated_input is not None), None)
        if updated is not None:
            # A hook rewrote the input: it is a new call as far as authority goes.
            args = self.validate(tool, updated)
            if isinstance(args, Refused):
                return args
            proposed = self._propose(call, tool, args, ctx, dict(updated))
            if isinstance(proposed, Refused):
                return proposed
            vote = self.votes(proposed, snapshot)
            if vote.decision == "deny":
                return self._denied(proposed, vote)
        if any(v.decision == "ask" for v in verdicts) and vote.decision == "allow":
            vote = _hooks_vote(verdicts, "ask", "a hook asks for confirmation")
        elif (
            vote.decision == "ask"
            and not vote.hard
            and any(v.decision == "allow" for v in verdicts)
        ):
            vote = _hooks_vote(verdicts, "allow", "a hook allowed it")
        allowed, message = await self.authorize(
            proposed,
            vote,
            summary=self._summary(tool, args),
            preview=lambda: self._preview(tool, args, ctx),
        )
        if not allowed:
            return Refused(ToolResult.error(message))
        return Ready(call, tool, args, ctx, proposed)

    def _blocked(self, proposed: ProposedCall, verdict: Any, why: str, refused: Refused) -> Refused:
        """A hook's refusal of a call: its permission event, then ``refused``."""
        self.emit(_permission(proposed, "deny", why, origin="hook", plugin=verdict.plugin))
        return refused

    def _show_messages(self, verdicts: list[Any]) -> None:
        for verdict in verdicts:
            if verdict.system_message:
                self.emit(NoticeEvent(level="info", message=verdict.system_message))

    def _denied(self, proposed: ProposedCall, vote: Vote) -> Refused:
        self.emit(_permission(proposed, "deny", vote.reason, vote=vote))
        return Refused(
            ToolResult.error(
                f"[ketch] Permission denied: {vote.reason or 'a policy rule denies this'}. Do not retry it; choose another way or ask the user."
            )
        )

    async def authorize(
        self,
        proposed: ProposedCall,
        vote: Vote,
        *,
        summary: str,
        preview: Callable[[], Awaitable[str | None]] | None = None,
    ) -> tuple[bool, str]:
        """Act on a combined vote: allow, deny, or ask the approver. Returns (allowed, message)."""
        session = self.session
        if vote.decision == "deny":
            return False, self._denied(proposed, vote).result.output
        if vote.decision == "allow":
            self.emit(_permission(proposed, "allow", vote.reason, vote=vote))
            return True, ""
        if self.approver is None:
            self.emit(
                _permission(
                    proposed,
                    "ask",
                    vote.reason,
                    vote=vote,
                    approved=False,
                    origin="no-approver",
                )
            )
            return False, (
                f"[ketch] This needs the user's approval ({vote.reason or 'no rule allows it'}), and no one can approve it in "
                "this mode, so it was not run. Ask the user to allow it, or do without it."
            )
        shown = await preview() if preview is not None else None
        await self.kernel.hooks.call_async(
            "ketch_notification",
            session=session,
            message=f"ketch needs your permission to use {proposed.tool}",
            kind="permission",
        )
        answer = await self.approver(
            ApprovalRequest(
                call=proposed,
                reason=vote.reason,
                summary=summary,
                scope=vote.scope,
                preview=shown,
                hard=vote.hard,
            )
        )
        # What the answer remembers is kept by whoever keeps approvals (the policy),
        # from this event: the kernel keeps no authority of its own.
        scope = vote.scope if answer.approved and answer.remember != "once" else None
        self.emit(
            _permission(
                proposed,
                "ask",
                vote.reason,
                vote=vote,
                approved=answer.approved,
                scope=scope if answer.remember == "always" else None,
                remembered=scope,
                origin=answer.origin or "approver",
            )
        )
        if answer.approved:
            return True, ""
        note = f" The user said: {answer.message}" if answer.message else ""
        return False, f"[ketch] The user declined this call.{note}"

    # --- running ----------------------------------------------------------------------------

    async def execute(self, ready: Ready) -> tuple[ToolResult, str]:
        call, tool, ctx = ready.call, ready.tool, ready.ctx
        await self.kernel.hooks.call_async(  # e.g. a checkpoint
            "ketch_before_tool_effect", session=self.session, call=ready.proposed
        )
        self.emit(
            ToolStartedEvent(tool_call_id=call.id, name=call.name, input=ready.proposed.input)
        )
        delegates = DELEGATES in tool.capabilities
        token = _RUNNING.set(
            RunningCall(self.session, call.id, self.approver, self.allowed_tools)
            if delegates
            else None
        )
        try:
            result = await tool.run(ready.args, ctx)
            if not isinstance(result, ToolResult):
                result = ToolResult.error(
                    f"[ketch] Tool '{call.name}' returned {type(result).__name__}, not a result"
                )
        except asyncio.CancelledError:
            ctx.cancelled.set()
            self._record(call, ToolResult.error(CANCELLED), "cancelled")
            raise
        except Exception as exc:  # noqa: BLE001 - a tool never raises into the loop
            result = ToolResult.error(
                f"[ketch] Tool '{call.name}' failed: {type(exc).__name__}: {exc}"
            )
        finally:
            _RUNNING.reset(token)
        verdicts = await self.kernel.hooks.after_tool_use(self.session, ready.proposed, result)
        self._show_messages(verdicts)
        notes = [v.context or v.reason for v in verdicts if v.context or v.reason]
        if notes:
            result = result.model_copy(update={"output": result.output + "\n\n" + "\n".join(notes)})
        stopper = next((v for v in verdicts if v.stop), None)
        if stopper is not None and self.stop_reason is None:
            self.stop_reason = stopper.stop_reason or stopper.reason or "a hook asked to stop"
        # Last, so a filter (secret redaction) sees everything the model, journal and screen will.
        result = self.kernel.hooks.tool_result(self.session, ready.proposed, result)
        return result, ("succeeded" if result.ok else "failed")

    # --- what the person sees -----------------------------------------------------------------

    def _call_summary(self, call: ToolCallPart) -> str:
        """The one line shown for a call (the full command line for shell), when it validates."""
        tool = self.kernel.tools.get(call.name)
        if tool is None or call.input_error:
            return ""
        args = self.validate(tool, call.input)
        return "" if isinstance(args, Refused) else self._summary(tool, args)

    def _summary(self, tool: Tool, args: Any) -> str:
        try:
            return tool.summary(args)
        except Exception:  # noqa: BLE001
            return str(args.model_dump_json())

    async def _preview(self, tool: Tool, args: Any, ctx: ToolContext) -> str | None:
        try:
            return await tool.preview(args, ctx)
        except Exception as exc:  # noqa: BLE001 - a preview bug must not hide the prompt
            return f"(no preview: {type(exc).__name__}: {exc})"

    def _tool_context(
        self, call: ToolCallPart, snapshot: PermissionSnapshot, tool: Tool
    ) -> ToolContext:
        async def authorize(access: Access) -> bool:
            effects = frozenset({access.effect}) | tool.effects
            proposed = _proposed(call, tool, call.input, (access,), effects=effects)
            allowed, _ = await self.authorize(
                proposed,
                self.votes(proposed, snapshot),
                summary=f"{access.effect.value} {access.target}",
            )
            return allowed

        def output(text: str) -> None:
            if not text:
                return
            # The same filters as the result (secret redaction) before anyone sees it.
            proposed = _proposed(call, tool, call.input, capabilities=frozenset())
            shown = self.kernel.hooks.tool_result(self.session, proposed, ToolResult(output=text))
            self.emit(ToolOutputEvent(tool_call_id=call.id, name=call.name, text=shown.output))

        return ToolContext(
            workspace=self.session.workspace,
            session_id=self.session.id,
            settings=self.kernel.settings,
            state=self.session.state,
            authorize=authorize,
            emit=self.emit,
            tool_call_id=call.id,
            output=output,
            stash=self.session.stash,
        )


def _proposed(
    call: ToolCallPart,
    tool: Tool,
    data: dict[str, Any],
    accesses: tuple[Access, ...] = (),
    *,
    effects: frozenset[Effect] | None = None,
    capabilities: frozenset[str] | None = None,
) -> ProposedCall:
    """The call as the policy sees it: the tool's declarations (``effects`` and
    ``capabilities`` when given instead), ``data`` as its input, what it would touch."""
    return ProposedCall(
        id=call.id,
        tool=tool.name,
        input=data,
        effects=tool.effects if effects is None else effects,
        mutating=tool.mutating,
        accesses=accesses,
        plugin=tool.plugin,
        capabilities=tool.capabilities if capabilities is None else capabilities,
    )


def _hooks_vote(verdicts: list[Any], decision: Decision, default: str) -> Vote:
    """The hooks' ``decision`` as a vote: the first of them that gave it, the first
    reason given (``default`` when none was)."""
    given = [v for v in verdicts if v.decision == decision]
    reason = next((v.reason for v in given if v.reason), "") or default
    return Vote(decision=decision, reason=reason, plugin=given[0].plugin, origin="hook")


def _permission(
    proposed: ProposedCall,
    decision: Decision,
    reason: str,
    *,
    vote: Vote | None = None,
    origin: str = "",
    plugin: str = "",
    **more: Any,
) -> PermissionEvent:
    """The permission event of a decision, saying who made it (provenance): the vote's
    voter and origin unless ``origin``/``plugin`` say otherwise (a hook, an approver)."""
    return PermissionEvent(
        tool_call_id=proposed.id,
        decision=decision,
        reason=reason,
        origin=origin or (vote.origin if vote is not None else "") or "vote",
        plugin=plugin or (vote.plugin if vote is not None else ""),
        rules=list(vote.rules) if vote is not None and not origin else [],
        effects=sorted(
            {e.value for e in proposed.effects} | {a.effect.value for a in proposed.accesses}
        ),
        **more,
    )
