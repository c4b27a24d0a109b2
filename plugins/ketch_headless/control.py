"""Claude Code's control protocol on stdin/stdout: what the Agent SDK and ketch say to
each other beside the conversation.

From the program (a ``control_request`` line; ketch answers with a ``control_response``):

* ``initialize``: registers the program's hook callbacks (``hooks``: per event, a
  matcher and callback ids) and starts the MCP servers it hosts itself (``"type":
  "sdk"`` in ``--mcp-config``); the answer lists ketch's slash commands.
* ``interrupt``: cancels the running turn (it ends with a ``result``).
* ``set_permission_mode``: ketch's mode and profile from then on (the table in
  :mod:`ketch_claude_kit.permission_modes`).
* ``set_model``: the model of the next turns (the same provider).
* ``mcp_status``, ``get_context_usage``: what ketch knows.
* anything else: an ``error`` response naming it, the session goes on.

From ketch (a ``control_request`` the program answers):

* ``can_use_tool`` (with ``--permission-prompt-tool stdio``): the program is ketch's
  approver for a call the policy *asks* about. Deny rules and hard guards come first:
  what a deny rule refuses never reaches it, and a hard guard's ask is denied without
  asking (a program is not the person the guard is for).
* ``hook_callback``: one of the program's hook callbacks, for PreToolUse, PostToolUse,
  PostToolUseFailure, UserPromptSubmit, Stop, SubagentStart, SubagentStop,
  Notification, PreCompact; its answer is read as a Claude Code hook's JSON.
* ``mcp_message``: a JSON-RPC message for one of the program's own MCP servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.api import StashKey

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ApprovalAnswer, ApprovalRequest, Kernel, Session

# The channel of this process (one headless run, one program at the other end).
CHANNEL = StashKey["ControlChannel"]()
HOOK_TIMEOUT = 60.0  # seconds a hook callback may take (Claude Code's matcher timeout overrides)
# Who answered a `can_use_tool` request, for provenance (docs/provenance.md's origins).
SDK = "sdk"


class ControlError(Exception):
    """The program answered a request with an error, or could not be reached."""


@dataclass(frozen=True)
class CallbackMatcher:
    event: str
    matcher: str | None
    callback_ids: tuple[str, ...]
    timeout: float = HOOK_TIMEOUT


@dataclass
class ControlChannel:
    kernel: Kernel
    session: Session
    write: Callable[[dict[str, Any]], None]
    interrupt: Callable[[], None] = lambda: None
    notice: Callable[[str], None] = lambda message: None
    asks_program: bool = False  # --permission-prompt-tool stdio
    never_ask: bool = False  # --permission-mode dontAsk
    hooks: list[CallbackMatcher] = field(default_factory=list)
    sdk_servers: dict[str, Any] = field(default_factory=dict)  # name -> SdkMcpServer
    sdk_server_names: list[str] = field(default_factory=list)  # named in initialize
    rules: dict[str, list[str]] = field(default_factory=dict)  # from initialize (narrowing)
    system_prompt: str = ""  # from initialize (the TypeScript SDK sends it there)
    append_system_prompt: str = ""
    _pending: dict[str, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    # Cleared while an initialize request is being answered: a turn waits for it (the
    # TypeScript SDK sends its first prompt without waiting for the answer, and the
    # program's own MCP tools and rules must be in place before the model is called).
    settled: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.settled.set()

    # --- ketch asking the program -------------------------------------------------------

    async def request(self, body: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send a control request; the program's ``response`` object, or ControlError."""
        request_id = f"ketch_req_{next(self._ids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self.write({"type": "control_request", "request_id": request_id, "request": body})
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            self.write({"type": "control_cancel_request", "request_id": request_id})
            raise ControlError(f"no answer to {body.get('subtype')} within {timeout:g} s") from None
        except asyncio.CancelledError:
            self.write({"type": "control_cancel_request", "request_id": request_id})
            raise
        finally:
            self._pending.pop(request_id, None)

    def answered(self, data: dict[str, Any]) -> bool:
        """A ``control_response`` line from the program; False when nobody waits for it."""
        response = data.get("response")
        if not isinstance(response, dict):
            return False
        future = self._pending.get(str(response.get("request_id")))
        if future is None or future.done():
            return False
        if response.get("subtype") == "error":
            future.set_exception(ControlError(str(response.get("error") or "an error")))
        else:
            body = response.get("response")
            future.set_result(body if isinstance(body, dict) else {})
        return True

    def close(self) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ControlError("the program closed its input"))

    # --- the program asking ketch ---------------------------------------------------------

    def received(self, data: dict[str, Any]) -> None:
        """A ``control_request`` line: answered by a task of its own (an answer may need
        the program's own answers, which arrive on the same stdin)."""
        request = data.get("request")
        if isinstance(request, dict) and request.get("subtype") == "initialize":
            self.settled.clear()
        task = asyncio.ensure_future(self._answer(data))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda _: self.settled.set())

    async def _answer(self, data: dict[str, Any]) -> None:
        request_id = data.get("request_id")
        request = data.get("request")
        subtype = request.get("subtype") if isinstance(request, dict) else None
        handler = getattr(self, f"_on_{subtype}", None) if isinstance(subtype, str) else None
        try:
            if handler is None:
                raise ControlError(f"ketch does not support control request {subtype!r}")
            body = await handler(request)
        except ControlError as exc:
            self._respond_error(request_id, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - a bad request gets an answer, never a crash
            self._respond_error(request_id, f"{type(exc).__name__}: {exc}")
            return
        self.write(
            {
                "type": "control_response",
                "response": {"subtype": "success", "request_id": request_id, "response": body},
            }
        )

    def _respond_error(self, request_id: Any, message: str) -> None:
        self.write(
            {
                "type": "control_response",
                "response": {"subtype": "error", "request_id": request_id, "error": message},
            }
        )

    async def _on_initialize(self, request: dict[str, Any]) -> dict[str, Any]:
        self.hooks = parse_hooks(request.get("hooks"), self.notice)
        if request.get("agents"):
            self.notice(
                "the program's agent definitions are not used: ketch reads agents from "
                ".ketch/agents/ and .claude/agents/"
            )
        self._initial_options(request)
        from ketch_headless.sdk_mcp import start_servers

        await start_servers(self)
        commands = [
            {
                "name": c.name,
                "description": c.help,
                "argumentHint": str(c.extra.get("argument_hint") or ""),
            }
            for c in self.kernel.commands.values()
            if c.slash and c.slash_run is not None
        ]
        return {
            "commands": commands,
            "output_style": "default",
            "available_output_styles": ["default"],
            "models": [],
            "account": {},
            "hooks_applied": True,
        }

    def _initial_options(self, request: dict[str, Any]) -> None:
        """What the TypeScript SDK sends in ``initialize`` rather than on the command line
        (``--await-initialize``): its own MCP servers, deny rules, a settings object, the
        system prompt. Anything that would narrow authority and cannot be honoured is an
        error (the program does not start believing a rule holds that does not)."""
        import json

        from ketch_claude_kit.rules import MappingError, from_claude
        from ketch_claude_kit.settings_import import from_settings

        names = request.get("sdkMcpServers")
        if isinstance(names, list):
            self.sdk_server_names += [str(n) for n in names if str(n) not in self.sdk_server_names]
        servers = request.get("mcpServers")
        if isinstance(servers, dict):
            others = [
                n
                for n, c in servers.items()
                if not (isinstance(c, dict) and c.get("type") == "sdk")
            ]
            if others:
                raise ControlError(
                    f"ketch starts MCP servers from --mcp-config or its config, not from initialize "
                    f"({', '.join(others)}): set mcpServersDelivery: 'argv'"
                )
            self.sdk_server_names += [
                str(n) for n in servers if str(n) not in self.sdk_server_names
            ]
        for entry in request.get("disallowedTools") or []:
            try:
                self.rules.setdefault("deny", []).append(from_claude(str(entry)))
            except MappingError as exc:
                raise ControlError(
                    f"disallowedTools: {exc}; ketch will not run without it"
                ) from None
        for key in ("settings", "managedSettings"):
            value = request.get(key)
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except ValueError:
                    raise ControlError(f"{key}: not JSON") from None
            if not isinstance(value, dict):
                continue
            plan = from_settings(Path(key), value, user=False)
            lost_denials = [line for line in plan.left_out if line.startswith("permissions.deny")]
            if lost_denials:
                raise ControlError(f"{key}: {lost_denials[0]}")
            for decision, rules in plan.rules.items():
                self.rules.setdefault(decision, []).extend(rules)
            for line in plan.left_out:
                self.notice(f"{key} (initialize): {line}")
            if plan.hooks:
                self.notice(
                    f"{key} (initialize): its hooks are not run (pass them with --settings)"
                )
        prompt = request.get("systemPrompt")
        self.system_prompt = "\n\n".join(prompt) if isinstance(prompt, list) else str(prompt or "")
        self.append_system_prompt = str(request.get("appendSystemPrompt") or "")

    async def _on_interrupt(self, request: dict[str, Any]) -> dict[str, Any]:
        self.interrupt()
        return {}

    async def _on_set_permission_mode(self, request: dict[str, Any]) -> dict[str, Any]:
        from ketch.api import KetchError
        from ketch_claude_kit.permission_modes import mapping

        try:
            found = mapping(str(request.get("mode")))
            if found.profile is not None:
                self.session.set_profile(found.profile)
            self.session.set_mode(found.mode)
        except (ValueError, KetchError) as exc:
            raise ControlError(str(exc)) from None
        self.never_ask = found.never_ask
        if found.note:
            self.notice(f"permission mode {request.get('mode')}: {found.note}")
        return {}

    async def _on_set_model(self, request: dict[str, Any]) -> dict[str, Any]:
        from ketch.api import KetchError

        model = request.get("model")
        session = self.session
        try:
            provider = self.kernel.build_provider(
                session.provider.name, str(model) if model else None
            )
        except KetchError as exc:
            raise ControlError(exc.message) from None
        old, session.provider = session.provider, provider
        with contextlib.suppress(Exception):
            await old.aclose()
        return {}

    async def _on_mcp_status(self, request: dict[str, Any]) -> dict[str, Any]:
        names = sorted({t.split("__")[1] for t in self.kernel.tools if t.startswith("mcp__")})
        status = [{"name": name, "status": "connected"} for name in names]
        status += [
            {"name": name, "status": "failed", "error": server.error}
            for name, server in self.sdk_servers.items()
            if server.error
        ]
        return {"mcpServers": status}

    async def _on_get_context_usage(self, request: dict[str, Any]) -> dict[str, Any]:
        from ketch_context_kit.budget import context_budget

        budget = context_budget(self.session)
        used = self.session.usage.input_tokens
        return {
            "categories": [],
            "totalTokens": used,
            "maxTokens": budget.capacity,
            "rawMaxTokens": budget.capacity,
            "percentage": round(100 * used / budget.capacity, 1) if budget.capacity else 0.0,
            "model": self.session.model,
            "isAutoCompactEnabled": True,
        }

    # --- the approver ---------------------------------------------------------------------

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        """``can_use_tool``: the program answers what the policy asks about."""
        from ketch.api import ApprovalAnswer
        from ketch_claude_kit.hook_payload import tool_input, updated_input
        from ketch_claude_kit.tool_names import shown_name

        call = request.call
        if request.hard:
            self.notice(
                f"{call.tool}: {request.reason}: a hard guard asks the person, and a program "
                "cannot answer for them; denied"
            )
            return ApprovalAnswer(
                approved=False,
                message=f"a hard guard asks the person ({request.reason}); the program cannot approve it",
            )
        if self.never_ask or not self.asks_program:
            return ApprovalAnswer(approved=False)
        workspace = self.session.workspace
        shown = tool_input(workspace, call.tool, call.input)
        body: dict[str, Any] = {
            "subtype": "can_use_tool",
            "tool_name": shown_name(call.tool),
            "input": shown,
            "tool_use_id": call.id,
            "permission_suggestions": [],
            "blocked_path": None,
            "decision_reason": request.reason,
            "title": request.summary,
            "description": request.reason,
            "ketch_tool_name": call.tool,
        }
        if request.agent:
            body["agent_id"] = request.agent
        try:
            answer = await self.request(body)
        except ControlError as exc:
            self.notice(f"can_use_tool for {call.tool} failed ({exc}); denied")
            return ApprovalAnswer(approved=False)
        behavior = answer.get("behavior")
        if behavior == "allow":
            new = answer.get("updatedInput")
            if isinstance(new, dict) and updated_input(
                workspace, call.tool, call.input, new
            ) != dict(call.input):
                return ApprovalAnswer(
                    approved=False,
                    message="the program allowed a changed input; ketch runs only the call as "
                    "proposed (a PreToolUse hook's updatedInput can change it, and is checked again)",
                    origin=SDK,
                )
            remember = "session" if answer.get("updatedPermissions") and request.scope else "once"
            return ApprovalAnswer(approved=True, remember=remember, origin=SDK)  # type: ignore[arg-type]
        message = answer.get("message")
        if answer.get("interrupt"):
            self.interrupt()
        return ApprovalAnswer(approved=False, message=str(message) if message else None, origin=SDK)


def parse_hooks(value: Any, notice: Callable[[str], None]) -> list[CallbackMatcher]:
    """The ``hooks`` of an ``initialize`` request."""
    from ketch_headless.sdk_hooks import EVENTS

    found: list[CallbackMatcher] = []
    if not isinstance(value, dict):
        return found
    for event, matchers in value.items():
        if event not in EVENTS:
            notice(
                f"the program's {event} hook callbacks are not called: ketch has no {event} event"
            )
            continue
        for entry in matchers if isinstance(matchers, list) else []:
            if not isinstance(entry, dict):
                continue
            ids = tuple(str(i) for i in entry.get("hookCallbackIds") or [])
            timeout = entry.get("timeout")
            seconds = (
                float(timeout)
                if isinstance(timeout, int | float)
                and not isinstance(timeout, bool)
                and timeout > 0
                else HOOK_TIMEOUT
            )
            matcher = entry.get("matcher")
            found.append(
                CallbackMatcher(str(event), str(matcher) if matcher else None, ids, seconds)
            )
    return found


def open_channel(kernel: Kernel, session: Session, runner: Any, claude: Any) -> ControlChannel:
    """The channel of a stream-json session in Claude Code's schema (kept in the kernel's
    stash, where the hook callbacks find it from any session, subagents' included)."""
    from ketch.api import NoticeEvent

    channel = ControlChannel(
        kernel,
        session,
        runner.write,
        interrupt=runner.cancel_current,
        notice=lambda message: kernel.emit(session, NoticeEvent(level="warning", message=message)),
        asks_program=bool(claude.stdio_approver),
        never_ask=getattr(kernel.args, "permission_mode", None) == "dontAsk",
    )
    kernel.stash[CHANNEL] = channel
    return channel
