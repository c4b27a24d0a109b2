"""An OpenAI-compatible Chat Completions server on 127.0.0.1 for the benchmarks.

It answers ``POST /chat/completions`` with a streamed answer in the wire format of the
recordings (role chunk, content or one tool call, ``finish_reason``, a usage chunk,
``[DONE]``) and ``GET /models`` with one model; it notes when each request arrives
and calls ``on_request(count)`` from the handler thread (the memory benchmark samples
the client's RSS there). ``tool_calls`` answers that many requests with a call of
``tool`` (arguments from ``tool_input(n)``), then text. It logs nothing.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    data = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "model": "bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def answer_text(text: str, prompt_tokens: int) -> bytes:
    words = text.split(" ")
    chunks = [_chunk({"role": "assistant", "content": ""})]
    chunks += [_chunk({"content": word if i == 0 else " " + word}) for i, word in enumerate(words)]
    return b"".join([*chunks, _chunk({}, "stop"), _usage(prompt_tokens), b"data: [DONE]\n\n"])


def answer_tool_call(
    call_id: str, name: str, arguments: dict[str, Any], prompt_tokens: int
) -> bytes:
    call = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    chunks = [
        _chunk({"role": "assistant", "content": None}),
        _chunk({"tool_calls": [call]}),
        _chunk({}, "tool_calls"),
    ]
    return b"".join([*chunks, _usage(prompt_tokens), b"data: [DONE]\n\n"])


def _usage(prompt_tokens: int) -> bytes:
    data = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 12,
            "total_tokens": prompt_tokens + 12,
        },
    }
    return b"data: " + json.dumps(data).encode() + b"\n\n"


class Loopback:
    def __init__(
        self,
        *,
        text: str = "ok",
        tool_calls: int = 0,
        tool: str = "",
        tool_input: Callable[[int], dict[str, Any]] | None = None,
        on_request: Callable[[int], None] | None = None,
    ) -> None:
        self.arrivals: list[tuple[str, float]] = []
        self.posts = 0
        self.body_bytes: list[int] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                server.arrivals.append(("GET", time.perf_counter()))
                self._send(
                    json.dumps(
                        {"object": "list", "data": [{"id": "bench-model", "object": "model"}]}
                    ).encode(),
                    "application/json",
                )

            def do_POST(self) -> None:
                server.arrivals.append(("POST", time.perf_counter()))
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.posts += 1
                n = server.posts
                server.body_bytes.append(len(body))
                if on_request is not None:
                    on_request(n)
                tokens = len(body) // 4
                if n <= tool_calls:
                    arguments = tool_input(n) if tool_input else {}
                    payload = answer_tool_call(f"call_{n}", tool, arguments, tokens)
                else:
                    payload = answer_text(text, tokens)
                self._send(payload, "text/event-stream")

            def _send(self, body: bytes, content_type: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def first(self, method: str, since: float) -> float | None:
        return next((t for m, t in self.arrivals if m == method and t >= since), None)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
