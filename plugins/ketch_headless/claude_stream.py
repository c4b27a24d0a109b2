"""ketch's events as Claude Code's stream-json messages (``--stream-schema claude``,
the ``ketch-claude`` command).

What a program built on ``claude -p --output-format stream-json`` or the Agent SDK
reads, one JSON object per line:

* ``{"type": "system", "subtype": "init", ...}`` when a turn starts: the session id,
  the model, the tools (Claude Code's names where ketch has the tool, ketch's own
  otherwise), the permission mode, the slash commands, the working directory;
* ``{"type": "assistant", "message": {...}}`` per content block of each answer (text,
  thinking, tool_use), all sharing the answer's ``message.id``, as Claude Code splits
  them;
* ``{"type": "user", "message": {"content": [tool_result, ...]}}`` with the results;
* ``{"type": "stream_event", "event": {...}}`` (with ``--include-partial-messages``):
  the Anthropic Messages stream events as the answer streams;
* ``{"type": "system", "subtype": "api_retry" | "compact_boundary" | "notice"}``;
* ``{"type": "result", ...}`` when a turn ends: ``subtype``, ``is_error``, ``result``,
  ``num_turns``, ``duration_ms``, ``duration_api_ms``, ``session_id``,
  ``total_cost_usd``, ``usage``, ``modelUsage``, ``permission_denials``, ``errors``.

A subagent's messages carry the ``parent_tool_use_id`` of the ``Agent`` call that
started it. ``total_cost_usd`` is null when the provider does not know the model's
price (never made up).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from ketch_claude_kit.hook_payload import tool_input
from ketch_claude_kit.tool_names import shown_name
from ketch_headless.meter import TurnMeter

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, Session, TurnEndEvent

# The Claude Code CLI version whose stream-json and control protocol this speaks (the
# Agent SDK only warns about an older or missing one).
CLAUDE_CODE_VERSION = "2.1.200"


def _uuid() -> str:
    return str(uuid.uuid4())


class Partial:
    """The Anthropic stream events of the answer being streamed (one response)."""

    def __init__(self, write: Callable[[dict[str, Any]], None], model: str) -> None:
        self.write, self.model = write, model
        self.started = False
        self.index = -1
        self.kind: str | None = None  # the open block's type
        self.message_id = f"msg_{uuid.uuid4().hex[:24]}"

    def _event(self, event: dict[str, Any]) -> None:
        self.write({"type": "stream_event", "event": event})

    def _start(self) -> None:
        if not self.started:
            self.started = True
            self._event(
                {
                    "type": "message_start",
                    "message": {
                        "id": self.message_id,
                        "type": "message",
                        "role": "assistant",
                        "model": self.model,
                        "content": [],
                        "stop_reason": None,
                        "usage": {"input_tokens": 0, "output_tokens": 0},
                    },
                }
            )

    def _stop_block(self) -> None:
        if self.kind is not None:
            self._event({"type": "content_block_stop", "index": self.index})
            self.kind = None

    def _open(self, kind: str, block: dict[str, Any]) -> None:
        self._start()
        if self.kind != kind:
            self._stop_block()
            self.index += 1
            self.kind = kind
            self._event(
                {"type": "content_block_start", "index": self.index, "content_block": block}
            )

    def text(self, text: str) -> None:
        self._open("text", {"type": "text", "text": ""})
        self._event(
            {
                "type": "content_block_delta",
                "index": self.index,
                "delta": {"type": "text_delta", "text": text},
            }
        )

    def thinking(self, text: str) -> None:
        self._open("thinking", {"type": "thinking", "thinking": "", "signature": ""})
        self._event(
            {
                "type": "content_block_delta",
                "index": self.index,
                "delta": {"type": "thinking_delta", "thinking": text},
            }
        )

    def finish(self, calls: list[dict[str, Any]], stop_reason: str, usage: dict[str, Any]) -> None:
        """The answer is complete: its tool_use blocks, then message_delta and message_stop."""
        for call in calls:
            self._stop_block()
            self._start()
            self.index += 1
            self._event(
                {
                    "type": "content_block_start",
                    "index": self.index,
                    "content_block": {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": call["name"],
                        "input": {},
                    },
                }
            )
            self._event(
                {
                    "type": "content_block_delta",
                    "index": self.index,
                    "delta": {
                        "type": "input_json_delta",
                        "partial_json": json.dumps(call["input"]),
                    },
                }
            )
            self._event({"type": "content_block_stop", "index": self.index})
        self._stop_block()
        self._start()
        self._event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": usage.get("output_tokens", 0)},
            }
        )
        self._event({"type": "message_stop"})


class ClaudeStreamPrinter:
    """Writes Claude Code's stream-json messages for a session's events (``finish`` and
    ``start`` are what the headless runner calls around each turn)."""

    claude_schema = True

    def __init__(
        self,
        out: TextIO,
        kernel: Kernel,
        *,
        partial: bool = False,
        replay: bool = False,
        emit_lines: bool = True,
    ) -> None:
        self.out, self.kernel = out, kernel
        self.partial_wanted, self.replay = partial, replay
        self.emit_lines = emit_lines  # False: only the result at the end (--output-format json)
        self.meter = TurnMeter()
        self.lock = threading.Lock()
        self.session: Session | None = None
        self.session_id = ""
        self.model = ""
        self.permission_mode = "default"
        self.parents: dict[str, str] = {}  # a subagent's id -> the Agent call that started it
        self.partial: Partial | None = None
        self.last_usage: dict[str, Any] = {}
        self.errors: list[str] = []
        self.tool_started: dict[str, float] = {}
        self.tool_seconds = 0.0
        self.turn_tools: Callable[[], frozenset[str] | None] = lambda: None  # --tools
        self.extra_init: dict[str, Any] = {}
        self.last_result: dict[str, Any] | None = None
        # Notices from before the first turn (the session's opening): said right after
        # the first init, which programs expect to be the first message.
        self.held: list[dict[str, Any]] | None = []

    # --- writing ------------------------------------------------------------------

    def write(self, obj: dict[str, Any]) -> None:
        """One line on stdout (control responses and requests go through here too)."""
        line = json.dumps(obj, ensure_ascii=False)
        with self.lock:
            self.out.write(line + "\n")
            self.out.flush()

    def _message(self, obj: dict[str, Any], agent_id: str | None = None) -> None:
        if not self.emit_lines:
            return
        obj.setdefault("uuid", _uuid())
        obj["session_id"] = self.session_id
        obj.setdefault("parent_tool_use_id", self.parents.get(agent_id) if agent_id else None)
        self.write(obj)

    # --- the turn -----------------------------------------------------------------

    def bind(
        self, session: Session, turn_tools: Callable[[], frozenset[str] | None] = lambda: None
    ) -> None:
        self.session = session
        self.session_id = session.id
        self.model = session.model
        self.turn_tools = turn_tools

    def start(self) -> None:
        self.meter.start()
        self.errors = []
        self.tool_seconds = 0.0
        self.partial = None
        if self.session is not None:
            from ketch_claude_kit.hook_payload import permission_mode

            self.model = self.session.model
            self.permission_mode = permission_mode(self.session)
            if getattr(self.kernel.args, "permission_mode", None) == "dontAsk":
                self.permission_mode = "dontAsk"
        self._message(self.init_message())
        held, self.held = self.held or [], None
        for message in held:
            self._message(message)

    def init_message(self) -> dict[str, Any]:
        allowed = self.turn_tools()
        tools = [shown_name(n) for n in self.kernel.tools if allowed is None or n in allowed]
        servers = sorted(
            {name.split("__")[1] for name in self.kernel.tools if name.startswith("mcp__")}
        )
        commands = sorted(
            c.name for c in self.kernel.commands.values() if c.slash and c.slash_run is not None
        )
        from ketch.api import __version__

        session = self.session
        return {
            "type": "system",
            "subtype": "init",
            "cwd": str(session.workspace if session is not None else self.kernel.workspace),
            "session_id": self.session_id,
            "tools": tools,
            "mcp_servers": [{"name": name, "status": "connected"} for name in servers],
            "model": self.model,
            "permissionMode": self.permission_mode,
            "slash_commands": commands,
            "apiKeySource": "none",
            "output_style": "default",
            "agents": [],
            "skills": [],
            "plugins": [],
            "claude_code_version": CLAUDE_CODE_VERSION,
            "ketch_version": __version__,
            **self.extra_init,
        }

    def __call__(self, event: Any) -> None:  # one of ketch.events.Event
        self.meter(event)
        kind = event.type
        agent_id = getattr(event, "agent_id", None)
        if kind == "session" and agent_id is None:
            self.session_id = event.session_id
            self.model = event.model
        elif kind == "subagent" and event.status == "started":
            self.parents[event.subagent_id] = event.tool_call_id
        elif kind in ("text_delta", "reasoning_delta"):
            if self.partial_wanted and agent_id is None and self.emit_lines:
                if self.partial is None:
                    self.partial = Partial(self._stream_event, self.model)
                (self.partial.text if kind == "text_delta" else self.partial.thinking)(event.text)
        elif kind == "retry":
            if event.discard:
                self.partial = None
            self._message(
                {
                    "type": "system",
                    "subtype": "api_retry",
                    "attempt": event.attempt,
                    "error": event.reason,
                    "discard": event.discard,
                },
                agent_id,
            )
        elif kind == "usage":
            self.last_usage = {
                "input_tokens": event.input_tokens,
                "output_tokens": event.output_tokens,
                "cache_read_input_tokens": event.cached_tokens,
                "cache_creation_input_tokens": 0,
            }
        elif kind == "message":
            self._on_message(event.message, agent_id)
        elif kind == "tool_started":
            self.tool_started[event.tool_call_id] = time.monotonic()
        elif kind == "tool_result":
            started = self.tool_started.pop(event.tool_call_id, None)
            if started is not None and agent_id is None:
                self.tool_seconds += time.monotonic() - started
        elif kind == "compaction":
            self._message(
                {
                    "type": "system",
                    "subtype": "compact_boundary",
                    "compact_metadata": {"trigger": "auto", "pre_tokens": event.before_tokens},
                    "post_tokens": event.after_tokens,
                },
                agent_id,
            )
        elif kind == "notice":
            notice = {
                "type": "system",
                "subtype": "notice",
                "level": event.level,
                "message": event.message,
            }
            if self.held is not None:
                self.held.append(notice)
            else:
                self._message(notice, agent_id)
        elif kind == "error":
            if event.kind == "bad_input":  # a stdin line, not the turn: said at once
                self._message(
                    {
                        "type": "system",
                        "subtype": "notice",
                        "level": "warning",
                        "message": event.message,
                    }
                )
            elif not event.retryable and agent_id is None:
                self.errors.append(f"{event.kind}: {event.message}")
        elif kind == "mode" and agent_id is None and self.session is not None:
            from ketch_claude_kit.hook_payload import permission_mode

            self.permission_mode = permission_mode(self.session)
        elif kind == "turn_end" and agent_id is None:
            self.last_result = self.result(event)
            if self.emit_lines:
                self._message(self.last_result)

    def _stream_event(self, obj: dict[str, Any]) -> None:
        self._message(obj)

    def _on_message(self, message: Any, agent_id: str | None) -> None:
        role = message.role
        if role == "assistant":
            self._assistant(message, agent_id)
        elif role == "tool":
            content = [
                {
                    "type": "tool_result",
                    "tool_use_id": part.tool_call_id,
                    "content": part.output,
                    "is_error": not part.ok,
                }
                for part in message.parts
                if part.type == "tool_result"
            ]
            if content:
                self._message(
                    {"type": "user", "message": {"role": "user", "content": content}}, agent_id
                )
        elif role == "user" and self.replay and not message.synthetic and agent_id is None:
            self._message(
                {"type": "user", "message": {"role": "user", "content": message.text}},
                agent_id,
            )

    def _assistant(self, message: Any, agent_id: str | None) -> None:
        blocks: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        workspace = self.session.workspace if self.session is not None else self.kernel.workspace
        for part in message.parts:
            if part.type == "text" and part.text:
                blocks.append({"type": "text", "text": part.text})
            elif part.type == "reasoning" and part.text:
                blocks.append(
                    {"type": "thinking", "thinking": part.text, "signature": part.signature or ""}
                )
            elif part.type == "tool_call":
                call = {
                    "type": "tool_use",
                    "id": part.id,
                    "name": shown_name(part.name),
                    "input": tool_input(workspace, part.name, part.input),
                }
                blocks.append(call)
                calls.append(call)
        stop_reason = "tool_use" if calls else "end_turn"
        usage = dict(self.last_usage) or {"input_tokens": 0, "output_tokens": 0}
        message_id = message.id
        if agent_id is None and self.partial_wanted and self.emit_lines:
            partial = self.partial or Partial(self._stream_event, self.model)
            message_id = partial.message_id
            partial.finish(calls, stop_reason, usage)
        self.partial = None
        for block in blocks:  # one line per content block, as Claude Code writes them
            self._message(
                {
                    "type": "assistant",
                    "message": {
                        "id": message_id,
                        "type": "message",
                        "role": "assistant",
                        "model": self.model,
                        "content": [block],
                        "stop_reason": stop_reason,
                        "stop_sequence": None,
                        "usage": usage,
                    },
                },
                agent_id,
            )

    def result(self, end: TurnEndEvent) -> dict[str, Any]:
        """The turn's ``result`` message (also the ``--output-format json`` object)."""
        cost = self.meter.finish(end)
        totals = self.meter.totals(end, cost)
        duration = totals["duration_ms"]
        usage = {**totals["usage"], "cache_creation_input_tokens": 0}
        is_error = end.stop_reason not in ("end_turn",)
        payload: dict[str, Any] = {
            "type": "result",
            "subtype": totals["subtype"],
            "is_error": is_error,
            "duration_ms": duration,
            "duration_api_ms": max(0, duration - int(self.tool_seconds * 1000)),
            "num_turns": totals["num_turns"],
            "result": end.text,
            "stop_reason": end.stop_reason,
            "session_id": self.session_id,
            "total_cost_usd": totals.get("total_cost_usd"),
            "usage": usage,
            "modelUsage": {
                self.model: {
                    "inputTokens": usage["input_tokens"],
                    "outputTokens": usage["output_tokens"],
                    "cacheReadInputTokens": usage["cache_read_input_tokens"],
                    "cacheCreationInputTokens": 0,
                    "costUSD": totals.get("cost_usd"),
                }
            },
            "permission_denials": [
                {**d, "tool_name": shown_name(d["tool_name"])} for d in totals["permission_denials"]
            ],
            "uuid": _uuid(),
        }
        if is_error:
            payload["errors"] = list(self.errors) or [f"the turn ended: {end.stop_reason}"]
        return payload

    def finish(self, end: TurnEndEvent, session: Session) -> None:
        if not self.emit_lines and self.last_result is not None:  # --output-format json
            self.write(self.last_result)
