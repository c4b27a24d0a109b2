"""One ACP session: a ketch session, its events as ``session/update``s, its approvals
as ``session/request_permission``, its prompts and their cancellation.

Events arrive synchronously (kernel listeners); they are turned into updates at once
and queued, and one sender task delivers them in order. Whatever must follow them
on the wire (a permission request, a prompt's response) first waits until the queue
is empty, so the editor always sees a tool call before the question about it and the
whole answer before ``end_turn``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    Cost,
    CurrentModeUpdate,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UnstructuredCommandInput,
    UsageUpdate,
)

from ketch_acp import toolcalls
from ketch_acp.modes import config_options
from ketch_acp.permissions import answer_for, options_for, rejection_key
from ketch_acp.plans import plan_update

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ApprovalAnswer, ApprovalRequest, Event, Kernel, Session, TurnEndEvent

log = logging.getLogger("ketch.acp")

STOP_REASONS = {
    "end_turn": "end_turn",
    "cancelled": "cancelled",
    "max_iterations": "max_turn_requests",
}


def _text(value: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=value)


@dataclass
class _Call:
    name: str
    input: dict[str, Any]
    path: str | None
    title: str
    kind: str


@dataclass
class LiveSession:
    kernel: Kernel
    conn: Any
    session: Session | None = None
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    sender: asyncio.Task[None] | None = None
    turn: asyncio.Task[Any] | None = None
    calls: dict[str, _Call] = field(default_factory=dict)
    rejected: set[str] = field(default_factory=set)
    held: list[str] = field(default_factory=list)  # notices from before the first prompt
    prompting: bool = False
    cancel_requested: bool = False
    last_error: str = ""
    last_notice: str = ""
    cost: float | None = None
    mode: str = ""
    loop: asyncio.AbstractEventLoop | None = None
    _loop_thread: int = field(default_factory=threading.get_ident)

    # --- the wire ------------------------------------------------------------------

    @property
    def id(self) -> str:
        assert self.session is not None
        return self.session.id

    @property
    def workspace(self) -> Path:
        return self.kernel.workspace

    def start_sender(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.sender = asyncio.create_task(self._send_loop(), name="ketch-acp-updates")

    async def _send_loop(self) -> None:
        await self.gate.wait()
        while True:
            update = await self.queue.get()
            try:
                if update is None:
                    return
                await self.conn.session_update(session_id=self.id, update=update)
            except Exception as exc:  # noqa: BLE001 - a closed connection: nothing more to deliver
                log.debug("session/update not delivered: %s", exc)
            finally:
                self.queue.task_done()

    def send(self, update: Any) -> None:
        # Events can come from a worker thread (while a session is being built there).
        if self.loop is not None and threading.get_ident() != self._loop_thread:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, update)
        else:
            self.queue.put_nowait(update)

    async def flush(self) -> None:
        """Wait until every queued update is on the wire."""
        if self.gate.is_set() and self.sender is not None and not self.sender.done():
            await self.queue.join()

    def say(self, text: str) -> None:
        self.send(AgentMessageChunk(session_update="agent_message_chunk", content=_text(text)))

    def note(self, text: str) -> None:
        """ketch's own remarks (warnings, retries, compaction): beside the answer, not in it."""
        self.send(
            AgentThoughtChunk(
                session_update="agent_thought_chunk", content=_text(f"ketch: {text}\n")
            )
        )

    def options_update(self) -> ConfigOptionUpdate:
        assert self.session is not None
        return ConfigOptionUpdate(
            session_update="config_option_update",
            config_options=config_options(self.session.mode, self.session.profile),
        )

    def commands_update(self) -> AvailableCommandsUpdate:
        commands = []
        for command in sorted(self.kernel.commands.values(), key=lambda c: c.name):
            if not command.slash or command.slash_run is None:
                continue
            hint = command.extra.get("argument_hint") if isinstance(command.extra, dict) else None
            commands.append(
                AvailableCommand(
                    name=command.name,
                    description=command.help,
                    input=AvailableCommandInput(root=UnstructuredCommandInput(hint=str(hint)))
                    if hint
                    else None,
                )
            )
        return AvailableCommandsUpdate(
            session_update="available_commands_update", available_commands=commands
        )

    # --- events --------------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        try:
            self._on_event(event)
        except Exception:  # noqa: BLE001 - a rendering bug must not break the turn
            log.exception(
                "could not turn a %s event into an ACP update", getattr(event, "type", "?")
            )

    def _on_event(self, event: Any) -> None:
        kind = event.type
        if kind == "text_delta":
            self.say(event.text)
        elif kind == "reasoning_delta":
            self.send(
                AgentThoughtChunk(session_update="agent_thought_chunk", content=_text(event.text))
            )
        elif kind == "tool_call":
            self._tool_call(event)
        elif kind == "tool_started":
            self.send(
                ToolCallProgress(
                    session_update="tool_call_update",
                    tool_call_id=event.tool_call_id,
                    status="in_progress",
                )
            )
        elif kind == "tool_result":
            self._tool_result(event)
        elif kind == "usage":
            self._usage(event)
        elif kind == "mode":
            if event.mode != self.mode:
                self.mode = event.mode
                self.send(
                    CurrentModeUpdate(
                        session_update="current_mode_update", current_mode_id=event.mode
                    )
                )
            self.send(self.options_update())
        elif kind == "notice":
            message = event.message
            log.warning("%s", message)
            self.last_notice = message
            if self.prompting:
                self.note(message)
            else:
                self.held.append(message)
        elif kind == "error":
            message = f"{event.kind}: {event.message}"
            if event.retry_in:
                self.note(f"{message} (retrying in {event.retry_in:.1f}s)")
            else:
                self.last_error = message
        elif kind == "todo":  # the model's task list (the todo tool): the editor's plan
            plan = plan_update("todo_write", {"todos": event.todos})
            if plan is not None:
                self.send(plan)
        elif kind == "compaction":
            self.note(
                f"compacted the context: {event.before_tokens} -> {event.after_tokens} tokens"
            )

    def _tool_call(self, event: Any) -> None:
        tool = self.kernel.tools.get(event.name)
        path = event.input.get("path") if isinstance(event.input, dict) else None
        call = _Call(
            name=event.name,
            input=event.input,
            path=toolcalls.absolute(path, self.workspace)
            if isinstance(path, str) and path
            else None,
            title=event.summary or event.name,
            kind=toolcalls.tool_kind(event.name, tool),
        )
        self.calls[event.id] = call
        content = toolcalls.input_diff(event.name, event.input, self.workspace)
        self.send(
            ToolCallStart(
                session_update="tool_call",
                tool_call_id=event.id,
                title=call.title,
                kind=call.kind,  # type: ignore[arg-type]
                status="pending",
                content=content or None,
                locations=toolcalls.locations(event.name, event.input, self.workspace) or None,
                raw_input=event.input,
            )
        )
        plan = plan_update(event.name, event.input)
        if plan is not None:
            self.send(plan)

    def _tool_result(self, event: Any) -> None:
        call = self.calls.get(event.tool_call_id)
        content: list[Any] = []
        line = None
        if event.diff:
            content += toolcalls.diff_contents(
                event.diff, self.workspace, call.path if call else None
            )
            line = toolcalls.first_changed_line(event.diff)
        if event.output:
            content.append(toolcalls.text_content(event.output))
        locations = toolcalls.locations(call.name, call.input, self.workspace, line) if call else []
        self.send(
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=event.tool_call_id,
                status="completed" if event.ok else "failed",
                content=content or None,
                locations=locations or None,
                raw_output={"ok": event.ok, "outcome": event.outcome, "output": event.output},
            )
        )

    def _usage(self, event: Any) -> None:
        cost = getattr(event, "cost_usd", None)
        if isinstance(cost, int | float):
            self.cost = (self.cost or 0.0) + float(cost)
        if event.effective_capacity <= 0:
            return
        self.send(
            UsageUpdate(
                session_update="usage_update",
                used=max(0, int(event.context_tokens)),
                size=int(event.effective_capacity),
                cost=Cost(amount=round(self.cost, 6), currency="USD")
                if self.cost is not None
                else None,
            )
        )

    # --- approvals -----------------------------------------------------------------

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        from ketch.api import ApprovalAnswer

        key = rejection_key(request)
        if key in self.rejected:
            self.note(
                f"rejected without asking: you chose to reject {request.scope or 'this call'} for the rest of this session"
            )
            return ApprovalAnswer(
                approved=False,
                message="The user rejected this for the rest of the session; do not ask again.",
            )
        call = self.calls.get(request.call.id)
        path = call.path if call else None
        preview = toolcalls.preview_contents(request.preview, self.workspace, path)
        if preview:
            # What the person approves is what the tool will do: the tool's own preview.
            self.send(
                ToolCallProgress(
                    session_update="tool_call_update", tool_call_id=request.call.id, content=preview
                )
            )
        content = preview or (
            toolcalls.input_diff(call.name, call.input, self.workspace) if call else []
        )
        await self.flush()
        tool_call = ToolCallUpdate(
            tool_call_id=request.call.id,
            title=call.title if call else request.summary,
            kind=call.kind if call else None,  # type: ignore[arg-type]
            status="pending",
            content=content or None,
            raw_input=request.call.input,
        )
        try:
            response = await self.conn.request_permission(
                session_id=self.id, tool_call=tool_call, options=options_for(request)
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - no answer is a no
            log.warning("session/request_permission failed: %s", exc)
            return ApprovalAnswer(
                approved=False, message="The approval request could not be shown to the user."
            )
        answer, reject_from_now_on = answer_for(response.outcome, request)
        if reject_from_now_on:
            self.rejected.add(key)
        return answer

    # --- prompts -------------------------------------------------------------------

    async def prompt(self, text: str, images: tuple[Any, ...] = ()) -> str:
        """Run one prompt (a turn, or a slash command); the ACP stop reason."""
        if self.prompting:
            raise RequestError(
                -32600,
                "a prompt is already running in this session; cancel it first (session/cancel)",
            )
        self.prompting, self.cancel_requested = True, False
        self.last_error = self.last_notice = ""
        try:
            for message in self.held:
                self.note(message)
            self.held.clear()
            command = self._slash_command(text)
            if command is not None:
                return await self._run_command(*command)
            assert self.session is not None
            if self.cancel_requested:
                return "cancelled"
            self.turn = asyncio.create_task(
                self.kernel.run_turn(self.session, text, approver=self.approve, parts=images),
                name="ketch-acp-turn",
            )
            try:
                end: TurnEndEvent = await self.turn
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise
                return "cancelled"  # cancelled before the turn even started
            await self.flush()
            return self._stop_reason(end)
        finally:
            await self.flush()
            self.turn = None
            self.prompting = False

    def _stop_reason(self, end: TurnEndEvent) -> str:
        reason = STOP_REASONS.get(end.stop_reason)
        if reason is not None:
            return reason
        message = self.last_error or self.last_notice or f"the turn ended: {end.stop_reason}"
        raise RequestError(-32603, message, {"stop_reason": end.stop_reason})

    def _slash_command(self, text: str) -> tuple[Any, str] | None:
        """The command ``/name args`` names (``/git:commit`` too), or None: not one of
        ketch's, and the model gets it as text."""
        from ketch_prompt_kit.slash import find

        return find(self.kernel.commands.values(), text)

    async def _run_command(self, command: Any, argument: str) -> str:
        from ketch.api import KetchError, SlashContext

        assert self.session is not None
        queued: list[Any] = []  # prompts a command hands over (a Markdown command, a skill)
        ctx = SlashContext(
            kernel=self.kernel,
            session=self.session,
            argument=argument,
            print=lambda line: self.say(line + "\n"),
            submit=queued.append,
        )
        try:
            result = command.slash_run(ctx)
            if inspect.isawaitable(result):
                self.turn = asyncio.ensure_future(result)
                await self.turn
            for request in queued:
                reason = await self._submitted(request)
                if reason != "end_turn":
                    return reason
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            return "cancelled"
        except KetchError as exc:
            self.say(f"/{command.name}: {exc.message}\n")
        except Exception as exc:  # noqa: BLE001 - a plugin's bug is one line, never a crash
            self.say(f"/{command.name} failed: {type(exc).__name__}: {exc}\n")
        return "end_turn"

    async def _submitted(self, request: Any) -> str:
        """A command's prompt as a turn, with its model and narrowed tools (as the shell does)."""
        assert self.session is not None
        session = self.session
        provider = None
        if request.model and request.model != session.model:
            provider = self.kernel.build_provider(session.provider.name, request.model)
            old, session.provider = session.provider, provider
        try:
            self.turn = asyncio.ensure_future(
                self.kernel.run_turn(
                    session,
                    request.text,
                    approver=self.approve,
                    allowed_tools=request.allowed_tools,
                )
            )
            end: TurnEndEvent = await self.turn
            await self.flush()
            return self._stop_reason(end)
        finally:
            if provider is not None:
                session.provider = old
                await provider.aclose()

    def cancel(self) -> None:
        """session/cancel: stop the running turn; a pending approval ends as cancelled."""
        self.cancel_requested = self.prompting
        if self.turn is not None and not self.turn.done():
            self.turn.cancel()

    async def close(self) -> None:
        from ketch_tool_kit import files

        self.cancel()
        if self.turn is not None:
            await asyncio.gather(self.turn, return_exceptions=True)
        if self.session is not None:
            files.detach(self.session.id)
            try:
                self.kernel.end(self.session, "exit")
            except Exception:  # noqa: BLE001
                log.exception("ending session %s", self.session.id)
            try:
                await self.session.provider.aclose()
            except Exception:  # noqa: BLE001
                log.debug("closing the provider failed", exc_info=True)
        await self.flush()
        if self.sender is not None:
            self.sender.cancel()
            await asyncio.gather(self.sender, return_exceptions=True)
