"""``--input-format stream-json``: Claude Code's user-message lines on stdin, one
session, one turn per message, ``stream-json`` out.

Each stdin line is one JSON object:

* ``{"type": "user", "message": {"role": "user", "content": "..." | [blocks]}}``
  is a turn (text blocks, and image blocks with a base64 ``source`` as Claude Code
  writes them). Messages that arrive while a turn runs wait their turn.
  ``"shouldQuery": false`` adds the message to the conversation without a turn.
* ``{"type": "control_request", "request_id": "...", "request": {"subtype": "interrupt"}}``
  cancels the running turn and is answered with a ``control_response`` line.
* EOF: the turns already sent finish, then the session ends.

A line that is not one of these gets an ``error`` event (kind ``bad_input``) and is
skipped; the session goes on. Every line is read as hostile: at most
:data:`MAX_LINE` bytes (a longer one is read to its end and dropped, never held),
UTF-8, JSON nested at most :data:`ketch_text_kit.jsonline.MAX_DEPTH` deep.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from ketch_text_kit.jsonline import Line, too_long_problem

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Approver, Kernel, Session, TurnEndEvent
    from ketch_headless.claude_run import ClaudeRun
    from ketch_headless.control import ControlChannel


# The control lines of Claude Code's protocol (--stream-schema claude): ketch's requests
# are answered (control_response) or withdrawn (control_cancel_request) on stdin too.
CHANNEL_LINES = ("control_request", "control_response", "control_cancel_request")


MAX_LINE = 50 * 1024 * 1024  # bytes in one stdin line (images travel base64 inside)


class BadLine(ValueError):
    pass


@dataclass
class UserLine:
    text: str
    query: bool = True
    images: tuple[Any, ...] = ()


def _image(block: dict[str, Any]) -> Any:
    """Claude Code's ``{"type": "image", "source": {"type": "base64", "media_type", "data"}}``."""
    from pydantic import ValidationError

    from ketch.api import ImagePart

    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64":
        raise BadLine(
            'an image block needs source: {"type": "base64", "media_type": ..., "data": ...}'
        )
    try:
        return ImagePart(
            media_type=str(source.get("media_type") or ""),
            data=str(source.get("data") or ""),
            name="image",
        )
    except (ValidationError, ValueError) as exc:
        first = (
            exc.errors()[0].get("msg", str(exc)) if isinstance(exc, ValidationError) else str(exc)
        )
        raise BadLine(f"the image block cannot be used: {first}") from None


def parse_user_content(content: Any) -> tuple[str, tuple[Any, ...]]:
    if isinstance(content, str):
        return content, ()
    if not isinstance(content, list):
        raise BadLine("message.content must be a string or a list of content blocks")
    texts: list[str] = []
    images: list[Any] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "image" and isinstance(block, dict):
            images.append(_image(block))
        else:
            raise BadLine(
                f"content block of type {kind!r} is not supported (ketch takes text and image blocks)"
            )
    return "\n".join(texts), tuple(images)


def parse_line(
    raw: bytes, control: tuple[str, ...] = ("control_request",)
) -> UserLine | dict[str, Any]:
    """A user message, or a control line (the object itself): ``control`` names the
    control types accepted (the Agent SDK's channel also answers ketch's requests)."""
    from ketch_text_kit.jsonline import LineProblem, parse

    try:
        data = parse(raw)
    except LineProblem as exc:
        raise BadLine(exc.message) from None
    if not isinstance(data, dict):
        raise BadLine("not a JSON object")
    kind = data.get("type")
    if kind in control:
        return data
    if kind != "user":
        raise BadLine(
            f'type {kind!r} is not accepted on stdin (expected "user" or "control_request")'
        )
    message = data.get("message")
    if not isinstance(message, dict) or message.get("role", "user") != "user":
        raise BadLine('a "user" line needs message: {"role": "user", "content": ...}')
    text, images = parse_user_content(message.get("content"))
    if not text.strip() and images:
        text = "(the image below)"
    if not text.strip():
        raise BadLine("the message is empty")
    return UserLine(text, query=data.get("shouldQuery", True) is not False, images=images)


def _reader(
    loop: asyncio.AbstractEventLoop, inbox: asyncio.Queue[Line | None], stream: BinaryIO
) -> None:
    """Blocking reads on a thread (stdin may be a file, a pipe or a terminal)."""
    from ketch_text_kit.jsonline import read_line

    try:
        while (line := read_line(stream, MAX_LINE)) is not None:
            loop.call_soon_threadsafe(inbox.put_nowait, line)
    except (OSError, ValueError):
        pass
    finally:
        with contextlib.suppress(RuntimeError):  # the loop already closed
            loop.call_soon_threadsafe(inbox.put_nowait, None)


class StreamSession:
    """Runs the turns the stdin lines ask for, in order, in one session."""

    def __init__(
        self,
        kernel: Kernel,
        session: Session,
        printer: Any,
        approver: Approver | None,
        write: Any,
        claude: ClaudeRun | None = None,
    ) -> None:
        self.kernel, self.session, self.printer, self.approver = kernel, session, printer, approver
        self.write = write  # writes one JSON object as a stdout line
        self.claude = claude  # Claude Code's options (--tools, slash commands)
        self.channel: ControlChannel | None = None  # the Agent SDK's control protocol
        self.jobs: asyncio.Queue[UserLine | None] = asyncio.Queue()
        self.current: asyncio.Task[TurnEndEvent] | None = None
        self.interrupted = False  # the running turn was cancelled on request: not a failure
        self.failed = False
        self.stopping = False  # a signal ends the session: no further turn starts

    def bad_input(self, number: int, problem: str) -> None:
        from ketch.api import ErrorEvent

        self.failed = True
        self.printer(
            ErrorEvent(
                kind="bad_input",
                retryable=False,
                message=f"stdin line {number}: {problem}; line skipped",
            )
        )

    def cancel_current(self) -> None:
        if self.current is not None and not self.current.done():
            self.interrupted = True
            self.current.cancel()

    def control(self, data: dict[str, Any]) -> None:
        if self.channel is not None and data.get("type") != "control_request":
            if data.get("type") == "control_response":
                self.channel.answered(data)
            return  # control_cancel_request: ketch answers every request at once
        request_id = data.get("request_id")
        request = data.get("request")
        subtype = request.get("subtype") if isinstance(request, dict) else None
        if subtype == "interrupt":
            if self.current is not None and not self.current.done():
                self.interrupted = True
                self.current.cancel()
            self.write(
                {
                    "type": "control_response",
                    "response": {"subtype": "success", "request_id": request_id, "response": {}},
                }
            )
            return
        if self.channel is not None:
            self.channel.received(data)
            return
        self.write(
            {
                "type": "control_response",
                "response": {
                    "subtype": "error",
                    "request_id": request_id,
                    "error": f"ketch does not support control request {subtype!r} (only interrupt)",
                },
            }
        )

    async def worker(self) -> None:
        from ketch.api import Message, MessageEvent, TextPart, TurnEndEvent

        while not self.stopping and (job := await self.jobs.get()) is not None:
            if not job.query:
                message = Message(role="user", parts=(TextPart(text=job.text), *job.images))
                self.session.append(message)
                self.kernel.emit(self.session, MessageEvent(message=message))
                continue
            if self.channel is not None:
                await self.channel.settled.wait()  # the program's initialize, answered
            self.printer.start()
            self.interrupted = False
            self.current = asyncio.create_task(
                self.claude.run_prompt(self.session, job.text, self.approver, job.images)
                if self.claude is not None
                else self.kernel.run_turn(
                    self.session, job.text, approver=self.approver, parts=job.images
                )
            )
            me = asyncio.current_task()
            try:
                end = await self.current
            except asyncio.CancelledError:
                if me is not None and me.cancelling():
                    raise
                # Interrupted before the turn even began: it still ends, once, cancelled.
                end = TurnEndEvent(text="", stop_reason="cancelled")
                self.kernel.emit(self.session, end)
            if me is not None and me.cancelling():
                self.stopping = True  # a signal: the turn ended cancelled; no other starts
            self.current = None
            self.printer.finish(end, self.session)
            if end.stop_reason != "end_turn" and not (
                end.stop_reason == "cancelled" and self.interrupted
            ):
                self.failed = True

    async def run(self, stream: BinaryIO) -> None:
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue[Line | None] = asyncio.Queue()
        threading.Thread(
            target=_reader, args=(loop, inbox, stream), name="ketch-stdin", daemon=True
        ).start()
        worker = asyncio.create_task(self.worker())
        try:
            await self._read(inbox, worker)
            self.jobs.put_nowait(None)
            if self.channel is not None:
                self.channel.close()  # nobody is left to answer ketch's requests
            await worker
        finally:
            if not worker.done():  # cancelled (a signal): the running turn ends as cancelled
                self.stopping = True  # and no queued message starts another
                self.jobs.put_nowait(None)
                worker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await worker

    async def _read(self, inbox: asyncio.Queue[Line | None], worker: asyncio.Task[None]) -> None:
        number = 0
        while (line := await inbox.get()) is not None:
            number += 1
            if line.too_long:
                self.bad_input(number, too_long_problem(line, MAX_LINE).message)
                continue
            if not line.data.strip():
                continue
            try:
                parsed = parse_line(
                    line.data, CHANNEL_LINES if self.channel is not None else ("control_request",)
                )
            except BadLine as exc:
                self.bad_input(number, str(exc))
                continue
            if isinstance(parsed, UserLine):
                self.jobs.put_nowait(parsed)
            else:
                self.control(parsed)
            if worker.done():
                break


def run_stream_input(
    kernel: Kernel,
    session: Session,
    printer: Any,
    approver: Approver | None,
    *,
    claude: ClaudeRun | None = None,
) -> int:
    """Serve stdin until EOF. The exit status: 0 when every line was good and every turn
    ended normally (or was interrupted on request), 1 otherwise, 128 + N when signal N
    ended it (the running turn cancelled first)."""
    from ketch_frontend_kit.signals import run_cancellable

    def write(obj: dict[str, Any]) -> None:
        printer.out.write(json.dumps(obj, ensure_ascii=False) + "\n")
        printer.out.flush()

    runner = StreamSession(
        kernel, session, printer, approver, getattr(printer, "write", write), claude
    )
    # The reading thread gets a stdin of its own: when ketch exits while it waits for a
    # line, the interpreter's own sys.stdin is not held by it.
    stream = os.fdopen(os.dup(sys.stdin.fileno()), "rb")

    async def serve() -> None:
        if claude is not None and getattr(printer, "claude_schema", False):  # the SDK's channel
            from ketch_headless.control import open_channel

            runner.channel = open_channel(kernel, session, runner, claude)
            if runner.channel.asks_program:
                runner.approver = runner.channel.approve
        try:
            await runner.run(stream)
        finally:
            await session.provider.aclose()

    outcome = run_cancellable(serve)
    if outcome.exit_code is not None:
        return outcome.exit_code
    return 1 if runner.failed else 0
