"""A real HTTP/1.1 server on 127.0.0.1 that plays recorded byte streams.

It runs its own event loop in a thread, so both in-process async tests and CLI
subprocesses can talk to it. Each reply is written chunk by chunk exactly as given
(chunked transfer encoding, TCP_NODELAY, an optional pause between writes so a split
lands in separate TCP segments); ``drop`` closes the socket mid-body. Every request is
recorded (method, path, headers, body), and so is the moment a client hangs up while
a reply is still streaming.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any


@dataclass
class Reply:
    status: int = 200
    chunks: list[bytes] = field(default_factory=list)
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)
    pause: float = 0.0  # seconds between chunk writes
    drop: bool = False  # close the connection without ending the body

    @classmethod
    def json(cls, status: int, payload: Any, **headers: str) -> Reply:
        return cls(
            status=status,
            chunks=[json.dumps(payload).encode()],
            content_type="application/json",
            headers=headers,
        )


@dataclass
class Seen:
    method: str
    path: str
    target: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class LoopbackServer:
    def __init__(self) -> None:
        self.queues: dict[tuple[str, str], deque[Reply]] = {}
        self.defaults: dict[tuple[str, str], Reply | Callable[[Seen], Reply]] = {}
        self.requests: list[Seen] = []
        self.disconnects: list[
            tuple[str, float]
        ] = []  # (path, monotonic time) a client left mid-reply
        self.finished: list[
            tuple[str, float]
        ] = []  # (path, monotonic time) a reply was fully written
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0

    # --- control ------------------------------------------------------------------------

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        self._ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queue(self, path: str, *replies: Reply, method: str = "POST") -> None:
        """Replies for the next requests to ``method path``, in order."""
        self.queues.setdefault((method, path), deque()).extend(replies)

    def default(
        self, path: str, reply: Reply | Callable[[Seen], Reply], method: str = "GET"
    ) -> None:
        """The reply for ``method path`` whenever nothing is queued."""
        self.defaults[(method, path)] = reply

    def posts(self, path: str) -> list[Any]:
        return [r.json for r in self.requests if r.method == "POST" and r.path == path]

    # --- serving --------------------------------------------------------------------------

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            server.close()
            # Handlers still writing a reply (a client that hung up, a long pause) are
            # cancelled and finished here, not left for the garbage collector after the
            # loop is closed (which would print their tracebacks as warnings).
            pending = [t for t in asyncio.all_tasks(self._loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._loop.run_until_complete(server.wait_closed())
            self._loop.close()

    def _pick(self, seen: Seen) -> Reply:
        key = (seen.method, seen.path)
        queued = self.queues.get(key)
        if queued:
            return queued.popleft()
        default = self.defaults.get(key)
        if default is not None:
            return default(seen) if callable(default) else default
        return Reply.json(404, {"error": f"no reply queued for {seen.method} {seen.path}"})

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            line = await reader.readline()
            if not line:
                return
            method, target, _ = line.decode("latin-1").split(" ", 2)
            headers: dict[str, str] = {}
            while True:
                raw = await reader.readline()
                if raw in (b"\r\n", b"\n", b""):
                    break
                name, _, value = raw.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length") or 0))
            seen = Seen(
                method=method,
                path=target.partition("?")[0],
                target=target,
                headers=headers,
                body=body,
            )
            self.requests.append(seen)
            await self._send(self._pick(seen), seen.path, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _send(
        self, reply: Reply, path: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        reason = (
            HTTPStatus(reply.status).phrase
            if reply.status in HTTPStatus._value2member_map_
            else "Status"
        )
        head = [
            f"HTTP/1.1 {reply.status} {reason}",
            f"Content-Type: {reply.content_type}",
            "Transfer-Encoding: chunked",
            "Connection: close",
        ]
        head += [f"{k}: {v}" for k, v in reply.headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        await writer.drain()
        hangup = asyncio.ensure_future(reader.read(1))  # completes when the client closes
        try:
            for chunk in reply.chunks:
                if hangup.done():
                    self.disconnects.append((path, time.monotonic()))
                    return
                if chunk:
                    writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    await writer.drain()
                if reply.pause:
                    await asyncio.wait([hangup], timeout=reply.pause)
            if reply.drop:
                return
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            self.finished.append((path, time.monotonic()))
        except ConnectionError:
            self.disconnects.append((path, time.monotonic()))
        finally:
            hangup.cancel()


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
