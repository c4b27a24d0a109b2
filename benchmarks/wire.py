"""One scripted model on 127.0.0.1 that speaks every wire format the peer CLIs use.

    server = Wire(steps=[Step("read_file", {"path": "a.txt"}), ...], final="done")

It answers, by the request's path:

* ``POST .../chat/completions``: OpenAI Chat Completions, streamed (ketch, OpenCode);
* ``POST .../responses``: the OpenAI Responses API, streamed (Codex CLI);
* ``POST .../messages``: Anthropic Messages, streamed or not (Claude Code);
* ``POST .../models/MODEL:streamGenerateContent`` and ``:generateContent``: Gemini
  (Gemini CLI), streamed or not;
* ``GET`` anything: an empty model list (each format's shape).

The script is stateless: a *main* request (one that offers the scripted tool, found by its
name in the request's tool declarations) is answered with step ``k`` of the script, where
``k`` is the number of tool results the request carries already, and with the final text
once every step has its result. Any other request (a CLI's side calls: titles, quota
checks, "who speaks next" classifiers, token counts) gets a short text answer (or the JSON
a schema-constrained Gemini call asks for) and leaves the script alone. Every request is
recorded (arrival, path, body size, whether it was a main one, when its answer was sent)
so that a driver can measure launch to the first request, the time between an answer and
the next request, and the bytes sent. The tool calls follow the recorded formats in
/work/shared/reference/wire/ (Anthropic, Gemini, OpenAI chat) and Codex's own test
fixtures for the Responses API (``codex-rs/core/tests/common/responses.rs``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Step:
    """One tool call the model makes: the tool's name and its arguments."""

    tool: str
    arguments: dict[str, Any]


@dataclass
class Arrival:
    method: str
    path: str
    at: float  # time.perf_counter() when the request line arrived
    size: int = 0  # request body bytes
    main: bool = False  # it offered the scripted tool (the conversation, not a side call)
    results: int = 0  # tool results it carried (main requests)
    answered: float = 0.0  # when the answer's last byte was written
    body: bytes = b""


@dataclass
class Script:
    steps: list[Step]
    final: str = "done"
    # Tool names that make a request a main one (default: the steps' tools).
    tools: frozenset[str] = frozenset()
    # Called with each main request's body (parsed) before it is answered.
    on_main: Callable[[int, dict[str, Any]], None] | None = None
    keep_bodies: bool = False

    def marks(self) -> frozenset[str]:
        return self.tools or frozenset(step.tool for step in self.steps)


@dataclass
class _Reply:
    kind: str  # "call" | "text"
    text: str = ""
    step: Step | None = None
    index: int = 0


# --- reading requests --------------------------------------------------------------------


def tool_names(wire: str, body: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if wire == "gemini":
            for decl in tool.get("functionDeclarations") or tool.get("function_declarations") or []:
                names.add(str(decl.get("name", "")))
        elif wire == "chat":
            names.add(str((tool.get("function") or {}).get("name", "")))
        else:  # responses, anthropic
            names.add(str(tool.get("name", "")))
    return names


def _results(wire: str, body: dict[str, Any]) -> int:
    """How many tool results the conversation in ``body`` carries."""
    count = 0
    if wire == "chat":
        return sum(1 for m in body.get("messages") or [] if m.get("role") == "tool")
    if wire == "responses":
        return sum(
            1
            for item in body.get("input") or []
            if isinstance(item, dict)
            and item.get("type") in ("function_call_output", "custom_tool_call_output")
        )
    if wire == "anthropic":
        for message in body.get("messages") or []:
            content = message.get("content")
            if isinstance(content, list):
                count += sum(
                    1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
                )
        return count
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            if isinstance(part, dict) and (
                "functionResponse" in part or "function_response" in part
            ):
                count += 1
    return count


# --- writing answers ---------------------------------------------------------------------


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + json.dumps(data) + "\n\n").encode()


def chat_answer(reply: _Reply, prompt_tokens: int) -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "bench",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    usage = _sse(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "bench",
            "choices": [],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": 8,
                "total_tokens": prompt_tokens + 8,
            },
        }
    )
    if reply.kind == "call" and reply.step is not None:
        call = {
            "index": 0,
            "id": f"call_{reply.index}",
            "type": "function",
            "function": {"name": reply.step.tool, "arguments": json.dumps(reply.step.arguments)},
        }
        parts = [
            chunk({"role": "assistant", "content": None}),
            chunk({"tool_calls": [call]}),
            chunk({}, "tool_calls"),
        ]
    else:
        parts = [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": reply.text}),
            chunk({}, "stop"),
        ]
    return b"".join([*parts, usage, b"data: [DONE]\n\n"])


def responses_answer(reply: _Reply, prompt_tokens: int) -> bytes:
    rid = f"resp_{reply.index}"
    events = [_sse({"type": "response.created", "response": {"id": rid}}, "response.created")]
    if reply.kind == "call" and reply.step is not None:
        item = {
            "type": "function_call",
            "id": f"fc_{reply.index}",
            "call_id": f"call_{reply.index}",
            "name": reply.step.tool,
            "arguments": json.dumps(reply.step.arguments),
        }
    else:
        item = {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{reply.index}",
            "content": [{"type": "output_text", "text": reply.text}],
        }
        events.append(
            _sse(
                {"type": "response.output_text.delta", "delta": reply.text},
                "response.output_text.delta",
            )
        )
    events.append(
        _sse({"type": "response.output_item.done", "item": item}, "response.output_item.done")
    )
    usage = {
        "input_tokens": prompt_tokens,
        "input_tokens_details": None,
        "output_tokens": 8,
        "output_tokens_details": None,
        "total_tokens": prompt_tokens + 8,
    }
    events.append(
        _sse(
            {"type": "response.completed", "response": {"id": rid, "usage": usage}},
            "response.completed",
        )
    )
    return b"".join(events)


def anthropic_answer(reply: _Reply, prompt_tokens: int, model: str, stream: bool) -> bytes:
    if reply.kind == "call" and reply.step is not None:
        block: dict[str, Any] = {
            "type": "tool_use",
            "id": f"toolu_{reply.index:04d}",
            "name": reply.step.tool,
            "input": reply.step.arguments,
        }
        stop = "tool_use"
    else:
        block = {"type": "text", "text": reply.text}
        stop = "end_turn"
    message = {
        "id": f"msg_{reply.index:04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": prompt_tokens, "output_tokens": 1},
    }
    if not stream:
        whole = {**message, "content": [block], "stop_reason": stop}
        whole["usage"] = {"input_tokens": prompt_tokens, "output_tokens": 8}
        return json.dumps(whole).encode()
    events = [_sse({"type": "message_start", "message": message}, "message_start")]
    if block["type"] == "tool_use":
        start = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    events += [
        _sse(
            {"type": "content_block_start", "index": 0, "content_block": start},
            "content_block_start",
        ),
        _sse({"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta"),
        _sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 8},
            },
            "message_delta",
        ),
        _sse({"type": "message_stop"}, "message_stop"),
    ]
    return b"".join(events)


def gemini_answer(reply: _Reply, prompt_tokens: int, model: str, stream: bool) -> bytes:
    if reply.kind == "call" and reply.step is not None:
        part: dict[str, Any] = {
            "functionCall": {
                "name": reply.step.tool,
                "args": reply.step.arguments,
                "id": f"call_{reply.index}",
            }
        }
    else:
        part = {"text": reply.text}
    response = {
        "candidates": [
            {"content": {"parts": [part], "role": "model"}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": 8,
            "totalTokenCount": prompt_tokens + 8,
        },
        "modelVersion": model,
        "responseId": f"bench{reply.index}",
    }
    if not stream:
        return json.dumps(response).encode()
    return ("data: " + json.dumps(response) + "\r\n\r\n").encode()


def _schema_answer(schema: Any) -> Any:
    """A value that fits a (small) JSON schema: what a classifier call expects back."""
    if not isinstance(schema, dict):
        return "ok"
    kind = str(schema.get("type", "object")).lower()
    if "enum" in schema and schema["enum"]:
        return schema["enum"][-1]
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: _schema_answer(sub) for name, sub in props.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "user"


# --- the server ---------------------------------------------------------------------------


class Wire:
    def __init__(self, script: Script | None = None) -> None:
        self.script = script or Script(steps=[])
        self.arrivals: list[Arrival] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                arrival = server._arrive("GET", self.path, b"")
                if "generativelanguage" in self.path or "/v1beta" in self.path:
                    body: Any = {"models": []}
                else:
                    body = {"object": "list", "data": [{"id": "bench-model", "object": "model"}]}
                self._send(json.dumps(body).encode(), "application/json")
                arrival.answered = time.perf_counter()

            def do_HEAD(self) -> None:
                server._arrive("HEAD", self.path, b"")
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                started = time.perf_counter()
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    raw = self.rfile.read(length)
                elif self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    raw = self._read_chunked()
                else:
                    raw = b""
                arrival = server._arrive("POST", self.path, raw, started)
                payload, content_type = server._answer(self.path, raw, arrival)
                self._send(payload, content_type)
                arrival.answered = time.perf_counter()

            def _read_chunked(self) -> bytes:
                out = bytearray()
                while True:
                    line = self.rfile.readline().strip()
                    size = int(line.split(b";")[0] or b"0", 16)
                    if size == 0:
                        self.rfile.readline()
                        return bytes(out)
                    out += self.rfile.read(size)
                    self.rfile.readline()

            def _send(self, body: bytes, content_type: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def reset(self, script: Script | None = None) -> None:
        with self.lock:
            self.arrivals = []
            if script is not None:
                self.script = script

    def _arrive(self, method: str, path: str, raw: bytes, at: float | None = None) -> Arrival:
        arrival = Arrival(method, path, at or time.perf_counter(), len(raw))
        if self.script.keep_bodies:
            arrival.body = raw
        with self.lock:
            self.arrivals.append(arrival)
        return arrival

    def _answer(self, path: str, raw: bytes, arrival: Arrival) -> tuple[bytes, str]:
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        route = path.split("?", 1)[0]
        if route.endswith("/chat/completions"):
            wire = "chat"
        elif route.endswith("/responses"):
            wire = "responses"
        elif route.endswith("/messages"):
            wire = "anthropic"
        elif ":streamGenerateContent" in route or ":generateContent" in route:
            wire = "gemini"
        elif ":countTokens" in route or route.endswith("/count_tokens"):
            return json.dumps(
                {"totalTokens": len(raw) // 4, "input_tokens": len(raw) // 4}
            ).encode(), "application/json"
        else:
            return b"{}", "application/json"
        tokens = len(raw) // 4
        marks = self.script.marks()
        main = bool(marks & tool_names(wire, body))
        arrival.main = main
        if main:
            done = _results(wire, body)
            arrival.results = done
            if self.script.on_main is not None:
                self.script.on_main(done, body)
            if done < len(self.script.steps):
                reply = _Reply("call", step=self.script.steps[done], index=done + 1)
            else:
                reply = _Reply("text", text=self.script.final, index=done + 1)
        else:
            reply = _Reply("text", text="ok", index=0)
        if wire == "chat":
            return chat_answer(reply, tokens), "text/event-stream"
        if wire == "responses":
            return responses_answer(reply, tokens), "text/event-stream"
        model = str(body.get("model") or "bench")
        if wire == "anthropic":
            stream = bool(body.get("stream"))
            return (
                anthropic_answer(reply, tokens, model, stream),
                "text/event-stream" if stream else "application/json",
            )
        stream = ":streamGenerateContent" in route
        gemini_model = route.rsplit("/", 1)[-1].split(":", 1)[0]
        config = body.get("generationConfig") or body.get("config") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if not main and schema:
            reply = _Reply("text", text=json.dumps(_schema_answer(schema)))
        return (
            gemini_answer(reply, tokens, gemini_model, stream),
            "text/event-stream" if stream else "application/json",
        )

    # --- what was seen ---------------------------------------------------------------------

    def mains(self) -> list[Arrival]:
        with self.lock:
            return [a for a in self.arrivals if a.main]

    def first_main(self, since: float) -> float | None:
        return next((a.at for a in self.mains() if a.at >= since), None)

    def first_post(self, since: float) -> float | None:
        with self.lock:
            return next((a.at for a in self.arrivals if a.method == "POST" and a.at >= since), None)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class StepTimes:
    """Per step: the time from the answer that asked for the call to the request that
    carries its result (the CLI's whole work for one step: parse, decide, run, record,
    build and send the next request)."""

    gaps: list[float] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)


def step_times(mains: list[Arrival]) -> StepTimes:
    """The gaps between consecutive main requests (by the result count each carries:
    a retried request is not a step)."""
    out = StepTimes()
    by_results: dict[int, Arrival] = {}
    for arrival in mains:
        by_results.setdefault(arrival.results, arrival)
    for k in sorted(by_results):
        if k == 0 or k - 1 not in by_results:
            continue
        before, after = by_results[k - 1], by_results[k]
        out.gaps.append(after.at - before.answered)
    out.sizes = [by_results[k].size for k in sorted(by_results)]
    return out
