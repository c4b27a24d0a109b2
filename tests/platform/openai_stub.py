"""A small OpenAI-compatible Chat Completions server on 127.0.0.1, for end-to-end tests.

It answers ``POST /v1/chat/completions`` from a queue of replies: a text answer, tool
calls, or an HTTP error, streamed as Server-Sent Events in the wire format of the
recordings in shared/reference/wire/openai_chat_stream.md (role chunk, content or
tool-call fragments, finish_reason, usage chunk, ``[DONE]``). Every request body is
kept, so a test can check what the model was sent (tool results included).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200  # non-200: an error reply with ``error`` as its message
    error: str = ""


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "model": "stub",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def sse_events(answer: Answer) -> list[dict[str, Any]]:
    events = [_chunk({"role": "assistant", "content": ""})]
    for word in answer.text.split(" ") if answer.text else []:
        events.append(_chunk({"content": word if not events[1:] else " " + word}))
    for index, (name, args) in enumerate(answer.tool_calls):
        encoded = json.dumps(args)
        half = len(encoded) // 2
        events.append(
            _chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": f"call_{index}",
                            "type": "function",
                            "function": {"name": name, "arguments": encoded[:half]},
                        }
                    ]
                }
            )
        )
        events.append(
            _chunk({"tool_calls": [{"index": index, "function": {"arguments": encoded[half:]}}]})
        )
    events.append(_chunk({}, "tool_calls" if answer.tool_calls else "stop"))
    events.append(
        {
            "id": "chatcmpl-stub",
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
        }
    )
    return events


class OpenAIStub:
    def __init__(self, *answers: Answer) -> None:
        self.answers: deque[Answer] = deque(answers)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.arrived: list[float] = []  # time.time() as each request's body was read
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                body = json.dumps(
                    {"object": "list", "data": [{"id": "stub-model", "object": "model"}]}
                ).encode()
                self._send(200, body, "application/json")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                stub.requests.append(json.loads(self.rfile.read(length) or b"{}"))
                stub.arrived.append(time.time())
                stub.headers.append({k.lower(): v for k, v in self.headers.items()})
                answer = stub.answers.popleft() if stub.answers else Answer(text="(stub exhausted)")
                if answer.status != 200:
                    body = json.dumps(
                        {"error": {"message": answer.error or "stub error", "type": "server_error"}}
                    ).encode()
                    self._send(answer.status, body, "application/json")
                    return
                payload = (
                    b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in sse_events(answer))
                    + b"data: [DONE]\n\n"
                )
                self._send(200, payload, "text/event-stream")

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> OpenAIStub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"
