"""The ACP wire, guarded: every line from the editor is checked before the SDK sees it.

The SDK's own stdio reader hands whatever ``json.loads`` returns to its dispatcher,
which assumes an object: ``[]``, ``42`` or ``"hi"`` crash it, ``null`` ends it, and a
line that is not JSON is logged with a traceback and never answered. So ketch gives the
SDK a message-level transport of its own (the SDK's ``Transport`` seam, the one its
HTTP and WebSocket servers use) that reads the lines itself:

* a line longer than :data:`MAX_LINE` is read to its end and dropped, never held;
* bytes that are not UTF-8, text that is not JSON, or JSON nested deeper than
  :data:`ketch_text_kit.jsonline.MAX_DEPTH`: ``-32700`` parse error (id null);
* JSON that is not a JSON-RPC 2.0 message: ``-32600`` invalid request (with the
  request's id when it has a usable one);
* a batch (an array): ACP sends one message per line, so each request in it is
  answered ``-32600`` in one array, as JSON-RPC 2.0 answers batches; ``[]`` gets a
  single ``-32600``;
* a malformed response to one of ketch's own requests fails that request instead of
  leaving it waiting.

Everything else goes to the SDK unchanged, and the next line is read as if nothing
happened. Writes after the editor went away (a closed pipe) are dropped quietly.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Callable
from typing import Any

from ketch_text_kit.jsonline import (
    Line,
    LineProblem,
    parse,
    read_line_async,
    too_long_problem,
)

log = logging.getLogger("ketch.acp")

MAX_LINE = 50 * 1024 * 1024  # bytes in one message (images travel base64 inside them)
EOF_GRACE = 10.0  # seconds the requests read before stdin closed get to answer
INVALID_REQUEST, PARSE_ERROR = -32600, -32700
_ID_IN_HEAD = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')

Reply = dict[str, Any] | list[dict[str, Any]]


def _error(code: int, message: str, request_id: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _usable_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (type(value) is int)


def _id_of(message: dict[str, Any]) -> Any:
    value = message.get("id")
    return value if _usable_id(value) else None


def triage(value: Any) -> tuple[dict[str, Any] | None, Reply | None]:
    """(a message for the SDK, or None; an answer to send back, or None)."""
    if isinstance(value, list):
        return None, _batch(value)
    if not isinstance(value, dict):
        return None, _error(
            INVALID_REQUEST,
            f"Invalid request: a JSON-RPC message is an object, not {_json_type(value)}",
        )
    problem = _problem(value)
    if problem is None:
        return value, None
    if "method" not in value and ("result" in value or "error" in value):
        request_id = value.get("id")
        if type(request_id) is int:  # an answer to one of ketch's requests: fail that request
            log.warning("a malformed response from the editor (%s)", problem)
            return _error(
                INVALID_REQUEST, f"invalid response from the editor: {problem}", request_id
            ), None
        log.warning("a malformed response from the editor was ignored (%s)", problem)
        return None, None
    return None, _error(INVALID_REQUEST, f"Invalid request: {problem}", _id_of(value))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number" if isinstance(value, int | float) else "a string"


def _problem(message: dict[str, Any]) -> str | None:
    """What keeps ``message`` from being a JSON-RPC 2.0 request, notification or response."""
    if message.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if "id" in message and not _usable_id(message["id"]):
        return "id must be a string, an integer or null"
    if "method" in message:
        if not isinstance(message["method"], str):
            return "method must be a string"
        if "params" in message and not isinstance(message["params"], dict | list):
            return "params must be an object or an array"
        return None
    if "id" not in message:
        return "a message needs a method (or, as a response, an id)"
    has_result, has_error = "result" in message, "error" in message
    if has_result == has_error:
        return "a response has exactly one of result and error"
    if has_error:
        error = message["error"]
        if (
            not isinstance(error, dict)
            or type(error.get("code")) is not int
            or not isinstance(error.get("message"), str)
        ):
            return "error must be an object with an integer code and a string message"
    return None


def _batch(items: list[Any]) -> Reply | None:
    if not items:
        return _error(INVALID_REQUEST, "Invalid request: an empty batch")
    answers = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("method"), str) and "id" not in item:
            continue  # a notification: JSON-RPC never answers one
        request_id = _id_of(item) if isinstance(item, dict) else None
        answers.append(
            _error(
                INVALID_REQUEST,
                "Invalid request: batches are not supported by ACP; send each message on its own line",
                request_id,
            )
        )
    return answers or None


def _head_id(line: Line) -> Any:
    """A too-long request's id, read from its first bytes (best effort): its sender
    gets an error instead of waiting forever."""
    match = _ID_IN_HEAD.search(line.data)
    if match is None:
        return None
    with contextlib.suppress(ValueError):
        return json.loads(match.group(1))
    return None


class GuardedTransport:
    """An ``acp`` message transport over newline-delimited JSON on stdio."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        max_line: int = MAX_LINE,
        on_eof: Callable[[], None] = lambda: None,
        grace: float = EOF_GRACE,
    ) -> None:
        self.reader, self.writer, self.max_line = reader, writer, max_line
        self.on_eof, self.grace = on_eof, grace
        self.lock = asyncio.Lock()
        self.gone = False  # the editor's end of stdout is closed
        # Requests handed to the SDK and not answered yet (their ids): at EOF they are
        # given a moment to answer (running turns are cancelled first).
        self.unanswered: set[Any] = set()
        self.answered = asyncio.Event()

    async def send(self, message: dict[str, Any] | list[dict[str, Any]]) -> None:
        if isinstance(message, dict) and "method" not in message:
            self.unanswered.discard(message.get("id"))
            self.answered.set()
        data = (json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n").encode(
            "utf-8", "backslashreplace"
        )
        async with self.lock:
            if self.gone:
                return
            try:
                self.writer.write(data)
                await self.writer.drain()
            except (ConnectionError, OSError, RuntimeError) as exc:
                self.gone = True
                log.info("the editor closed the connection (%s)", type(exc).__name__)

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await read_line_async(self.reader, self.max_line)
            if line is None:
                await self._wind_down()
                return None
            if line.too_long:
                problem = too_long_problem(line, self.max_line)
                await self.send(
                    _error(INVALID_REQUEST, f"Invalid request: {problem.message}", _head_id(line))
                )
                continue
            if not line.data.strip():
                continue
            try:
                value = parse(line.data)
            except LineProblem as exc:
                await self.send(_error(PARSE_ERROR, f"Parse error: {exc.message}"))
                continue
            message, reply = triage(value)
            if reply is not None:
                await self.send(reply)
            if message is not None:
                if "method" in message and "id" in message:
                    self.unanswered.add(message["id"])
                return message

    async def _wind_down(self) -> None:
        """The editor closed our stdin: stop what runs, let the requests already read
        answer (briefly), then report the end to the SDK."""
        self.on_eof()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.grace
        while self.unanswered and not self.gone:
            self.answered.clear()
            left = deadline - loop.time()
            if left <= 0:
                log.info("%d request(s) left unanswered at disconnect", len(self.unanswered))
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.answered.wait(), left)

    async def close(self) -> None:
        async with self.lock:
            self.gone = True
            with contextlib.suppress(Exception):
                self.writer.close()
