"""The early request's answer as an ``httpx.Response``, parsed by h11 (httpx's own parser).

The response is read off the early request's socket on a worker thread, chunk by
chunk; h11 (already under httpx) parses the status line, the headers, chunked or
sized bodies. A failure of the socket or of the stream becomes the httpx error the
same failure of httpx's own connection would have been, so the provider classifies
it the same way (a timeout is a timeout, a cut stream is a cut stream).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ketch_early_request_kit.early import Early
    from ketch_import_kit.httpx import httpx

_CHUNK = 65536


class _Reader:
    def __init__(self, early: Early, request: httpx.Request) -> None:
        import h11

        self.early = early
        self.request = request
        self.timeout: float | None = None
        self.h11 = h11
        self.conn = h11.Connection(our_role=h11.CLIENT)
        # h11 must know the request it answers (it was sent at launch, byte for byte).
        self.conn.send(h11.Request(method="POST", target=_target(early.url), headers=early.headers))
        self.conn.send(h11.Data(data=early.body))
        self.conn.send(h11.EndOfMessage())

    async def next_event(self) -> Any:
        from ketch_import_kit.httpx import httpx

        h11 = self.h11
        while True:
            try:
                event = self.conn.next_event()
            except h11.RemoteProtocolError as exc:
                raise httpx.RemoteProtocolError(str(exc), request=self.request) from None
            if event is not h11.NEED_DATA:
                return event
            sock = self.early.sock
            if sock is None:
                raise httpx.ReadError("the connection was closed", request=self.request)
            try:
                data = await self._recv(sock)
            except TimeoutError:
                raise httpx.ReadTimeout("timed out", request=self.request) from None
            except OSError as exc:
                raise httpx.ReadError(
                    str(exc) or type(exc).__name__, request=self.request
                ) from None
            self.conn.receive_data(data)

    async def _recv(self, sock: Any) -> bytes:
        """One read: a plain socket through the event loop, a TLS one on a worker
        thread (the loop cannot read an ``ssl.SSLSocket``), each under the read timeout."""
        import ssl

        if isinstance(sock, ssl.SSLSocket):
            return await asyncio.to_thread(sock.recv, _CHUNK)
        if sock.gettimeout() != 0:
            self.timeout = sock.gettimeout()
            sock.setblocking(False)
        loop = asyncio.get_running_loop()
        return await asyncio.wait_for(loop.sock_recv(sock, _CHUNK), self.timeout)

    def close(self) -> None:
        sock, self.early.sock = self.early.sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()


def _target(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


async def adopt(early: Early, request: httpx.Request) -> httpx.Response:
    """The response to the early request (its headers read; the body streams)."""
    from ketch_import_kit.httpx import httpx

    reader = _Reader(early, request)
    h11 = reader.h11
    try:
        event = await reader.next_event()
        while isinstance(event, h11.InformationalResponse):
            event = await reader.next_event()
        if not isinstance(event, h11.Response):
            raise httpx.RemoteProtocolError(
                "the server closed the connection without answering", request=request
            )
    except BaseException:
        reader.close()
        raise

    class Body(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            while True:
                part = await reader.next_event()
                if isinstance(part, h11.Data):
                    yield bytes(part.data)
                elif isinstance(part, (h11.EndOfMessage, h11.ConnectionClosed)):
                    return

        async def aclose(self) -> None:
            reader.close()

    return httpx.Response(
        event.status_code,
        headers=[(k, v) for k, v in event.headers],
        stream=Body(),
        request=request,
        extensions={"http_version": b"HTTP/1.1", "reason_phrase": event.reason},
    )
