"""The egress proxy's protocols: HTTP (CONNECT tunnels and plain-HTTP forwarding) and SOCKS5.

One listener serves both: a SOCKS5 client's first byte is 5, an HTTP request's is a
letter. HTTP is read and written with h11 (MIT, the HTTP/1.1 state machine httpx's
stack uses), so request framing, header syntax and bodies are a maintained library's
business; the SOCKS5 server side (RFC 1928: no authentication, CONNECT only) is the
few lines below, as no maintained asyncio library offers a server that lets the
caller decide each connection before anything is resolved.

Nothing here decides anything: :func:`handle` reads the target (a canonical host and
a port, see :mod:`ketch_net_kit.hosts`), hands it to ``admit`` -- which checks the
rules, asks, resolves once and returns the addresses that may be connected to, or
raises :class:`Refused` -- and reports each connection, allowed or not, with its byte
counts to ``finish``. It never resolves a name itself and never connects to one: only
to the addresses ``admit`` returned. Plain HTTP is one request per connection
(``Connection: close`` both ways), so every request's host and method is checked.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

import h11

from ketch_net_kit.hosts import BadHost, Host, IPAddress, split_authority

CONNECT_TIMEOUT = 30.0
CHUNK = 1 << 16
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"proxy-connection",
        b"keep-alive",
        b"proxy-authorization",
        b"proxy-authenticate",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"expect",
    }
)
Headers = list[tuple[bytes, bytes]]


@dataclass
class Target:
    host: Host
    port: int
    protocol: Literal["connect", "http", "socks5"]
    method: str | None = None  # plain HTTP only
    url: str = ""  # plain HTTP: the absolute URL asked for

    @property
    def tunnel(self) -> bool:
        return self.protocol != "http"

    @property
    def where(self) -> str:
        return f"{self.host.authority}:{self.port}"


@dataclass
class Admitted:
    addresses: list[IPAddress]  # connect to these, in order (never to the name)
    rule: str = ""  # what allowed it ("allow 'pypi.org'", "approved")
    rewrite: Callable[[Headers], Headers] | None = None  # plain HTTP: the request's headers


class Refused(Exception):
    """Not allowed (or not possible); ``reason`` is the one line the client and log get."""

    def __init__(self, reason: str, rule: str = "", status: int = 403) -> None:
        super().__init__(reason)
        self.reason = reason
        self.rule = rule
        self.status = status


@dataclass
class Outcome:
    target: Target | None  # None: the request could not be read
    allowed: bool
    rule: str = ""
    reason: str = ""
    address: str = ""
    bytes_up: int = 0  # to the server
    bytes_down: int = 0  # to the client
    status: int | None = None  # plain HTTP: the server's status
    notes: list[str] = field(default_factory=list)


Admit = Callable[[Target], Awaitable[Admitted]]
Finish = Callable[[Outcome], None]


async def handle(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    admit: Admit,
    finish: Finish,
) -> None:
    """Serve one client connection to its end; ``finish`` is called exactly once."""
    outcome = Outcome(None, False)
    try:
        first = await reader.read(1)
        if first == b"\x05":
            await _socks5(reader, writer, admit, outcome)
        elif first:
            await _http(first, reader, writer, admit, outcome)
        else:
            outcome.reason = "the client sent nothing"
    except (
        ConnectionError,
        asyncio.IncompleteReadError,
        TimeoutError,
        OSError,
        h11.ProtocolError,
    ) as exc:
        if not outcome.allowed and not outcome.reason:
            outcome.reason = f"the connection failed ({type(exc).__name__})"
    except asyncio.CancelledError:
        outcome.notes.append("stopped when the session ended")
        raise
    finally:
        writer.close()
        finish(outcome)


# --- connecting and relaying --------------------------------------------------------------


async def _open(
    admitted: Admitted, port: int, outcome: Outcome
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    last: Exception | None = None
    for ip in admitted.addresses:
        try:
            pair = await asyncio.wait_for(asyncio.open_connection(str(ip), port), CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            last = exc
            continue
        outcome.address = f"{ip}" if ip.version == 4 else f"[{ip}]"
        return pair
    detail = f": {last}" if last else ""
    raise Refused(f"could not connect{detail}", admitted.rule, status=502)


async def _pipe(
    src: asyncio.StreamReader, dst: asyncio.StreamWriter, count: Callable[[int], None]
) -> None:
    try:
        while data := await src.read(CHUNK):
            dst.write(data)
            count(len(data))
            await dst.drain()
        if dst.can_write_eof():
            dst.write_eof()
    except (ConnectionError, OSError):
        dst.close()


async def _splice(
    client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    server: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    outcome: Outcome,
) -> None:
    def up(n: int) -> None:
        outcome.bytes_up += n

    def down(n: int) -> None:
        outcome.bytes_down += n

    try:
        await asyncio.gather(_pipe(client[0], server[1], up), _pipe(server[0], client[1], down))
    finally:
        server[1].close()


# --- SOCKS5 ---------------------------------------------------------------------------------

SOCKS_OK, SOCKS_NOT_ALLOWED, SOCKS_UNREACHABLE, SOCKS_REFUSED = 0, 2, 4, 5
SOCKS_BAD_COMMAND, SOCKS_BAD_ADDRESS = 7, 8


def _socks_reply(writer: asyncio.StreamWriter, code: int) -> None:
    writer.write(bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0]))


async def _socks5(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, admit: Admit, outcome: Outcome
) -> None:
    count = (await reader.readexactly(1))[0]
    methods = await reader.readexactly(count)
    if 0 not in methods:
        writer.write(b"\x05\xff")  # only "no authentication" is offered
        outcome.reason = "the SOCKS client offered no method the proxy speaks"
        return
    writer.write(b"\x05\x00")
    version, command, _, kind = await reader.readexactly(4)
    try:
        if kind == 1:
            ip4 = ipaddress.IPv4Address(await reader.readexactly(4))
            host = Host(str(ip4), ip4)
        elif kind == 4:
            ip6 = ipaddress.IPv6Address(await reader.readexactly(16))
            host = Host(ip6.compressed, ip6)
        elif kind == 3:
            size = (await reader.readexactly(1))[0]
            raw = await reader.readexactly(size)
            host, _ = split_authority(_decoded(raw), 0)
        else:
            _socks_reply(writer, SOCKS_BAD_ADDRESS)
            outcome.reason = "an unknown SOCKS address type"
            return
        port = int.from_bytes(await reader.readexactly(2), "big")
    except BadHost as exc:
        _socks_reply(writer, SOCKS_NOT_ALLOWED)
        outcome.reason = str(exc)
        return
    if version != 5 or command != 1 or port == 0:
        _socks_reply(writer, SOCKS_BAD_COMMAND)
        outcome.reason = "only SOCKS5 CONNECT to a port is supported (not BIND or UDP)"
        return
    target = outcome.target = Target(host, port, "socks5")
    try:
        admitted = await admit(target)
        outcome.rule = admitted.rule
        server = await _open(admitted, port, outcome)
    except Refused as exc:
        _socks_reply(writer, SOCKS_NOT_ALLOWED if exc.status == 403 else SOCKS_REFUSED)
        outcome.reason, outcome.rule = exc.reason, exc.rule or outcome.rule
        outcome.allowed = exc.status != 403
        return
    outcome.allowed = True
    _socks_reply(writer, SOCKS_OK)
    await writer.drain()
    await _splice((reader, writer), server, outcome)


def _decoded(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadHost(f"{raw!r} is not a host name") from None


# --- HTTP ------------------------------------------------------------------------------------


def _raw_response(writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    """A response written by hand (h11 may be in its error state): one line, then close."""
    line = reason.replace("\r", " ").replace("\n", " ")[:400]
    body = (line + "\n").encode("utf-8", "replace")
    writer.write(
        f"HTTP/1.1 {status} ".encode()
        + line.encode("ascii", "replace")
        + b"\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nX-Ketch-Egress: refused\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


async def _next(conn: h11.Connection, reader: asyncio.StreamReader) -> object:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(await reader.read(CHUNK))


async def _http(
    first: bytes,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    admit: Admit,
    outcome: Outcome,
) -> None:
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(first)
    try:
        request = await _next(conn, reader)
    except h11.RemoteProtocolError as exc:
        outcome.reason = f"a malformed HTTP request ({exc})"
        _raw_response(writer, 400, f"ketch egress proxy: {outcome.reason}")
        return
    if not isinstance(request, h11.Request):
        outcome.reason = "the client closed before sending a request"
        return
    method = request.method.decode("ascii", "replace").upper()
    try:
        target = outcome.target = _target(method, request.target)
    except BadHost as exc:
        outcome.reason = str(exc)
        _raw_response(writer, 400, f"ketch egress proxy: {exc}")
        return
    try:
        admitted = await admit(target)
        outcome.rule = admitted.rule
        server = await _open(admitted, target.port, outcome)
    except Refused as exc:
        outcome.reason, outcome.rule = exc.reason, exc.rule or outcome.rule
        outcome.allowed = exc.status != 403
        _raw_response(writer, exc.status, f"ketch: {exc.reason}")
        return
    outcome.allowed = True
    if target.tunnel:
        while not isinstance(await _next(conn, reader), h11.EndOfMessage):
            pass
        writer.write(
            conn.send(h11.Response(status_code=200, headers=[], reason=b"Connection established"))
            or b""
        )
        early, _ = conn.trailing_data
        if early:
            server[1].write(early)
            outcome.bytes_up += len(early)
        await writer.drain()
        await _splice((reader, writer), server, outcome)
        return
    try:
        await _forward(conn, reader, writer, request, target, admitted, server, outcome)
    finally:
        server[1].close()


def _target(method: str, raw: bytes) -> Target:
    text = raw.decode("ascii", "replace")
    if method == "CONNECT":
        host, port = split_authority(text)
        return Target(host, port, "connect")
    if not text.lower().startswith("http://"):
        raise BadHost(
            f"{text[:200]!r}: a proxy request names an absolute http:// URL (https goes through CONNECT)"
        )
    rest = text[7:]
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, path = rest[:end], rest[end:] or "/"
    if "@" in authority:
        raise BadHost(f"{text[:200]!r}: a user name or password in the URL is not forwarded")
    host, port = split_authority(authority, 80)
    if path.startswith("#"):
        path = "/"
    return Target(host, port, "http", method=method, url=f"http://{host.authority}:{port}{path}")


def _origin_form(target: Target) -> bytes:
    after = target.url.split("://", 1)[1]
    slash = min((i for i in (after.find(c) for c in "/?") if i >= 0), default=len(after))
    path = after[slash:] or "/"
    return ("/" + path if path.startswith("?") else path).split("#", 1)[0].encode("ascii")


def _forwardable(headers: Headers) -> Headers:
    named = {
        token.strip().lower()
        for name, value in headers
        if name.lower() == b"connection"
        for token in value.split(b",")
    }
    return [
        (name, value)
        for name, value in headers
        if name.lower() not in HOP_BY_HOP and name.lower() not in named and name.lower() != b"host"
    ]


async def _forward(
    conn: h11.Connection,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    request: h11.Request,
    target: Target,
    admitted: Admitted,
    server: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    outcome: Outcome,
) -> None:
    upstream = h11.Connection(h11.CLIENT)
    headers = _forwardable(list(request.headers))
    if admitted.rewrite is not None:
        headers = admitted.rewrite(headers)
    port = "" if target.port == 80 else f":{target.port}"
    framing = [
        (name, value)
        for name, value in request.headers
        if name.lower() in (b"content-length", b"transfer-encoding")
    ]
    head = h11.Request(
        method=request.method,
        target=_origin_form(target),
        headers=[
            (b"Host", f"{target.host.authority}{port}".encode()),
            *headers,
            *framing,
            (b"Connection", b"close"),
        ],
    )

    def up(data: bytes | None) -> None:
        if data:
            server[1].write(data)
            outcome.bytes_up += len(data)

    up(upstream.send(head))
    while True:
        event = await _next(conn, reader)
        if isinstance(event, h11.Data):
            up(upstream.send(h11.Data(data=event.data)))
            await server[1].drain()
        elif isinstance(event, h11.EndOfMessage):
            up(upstream.send(h11.EndOfMessage()))
            break
        else:
            return
    await server[1].drain()

    def down(data: bytes | None) -> None:
        if data:
            writer.write(data)
            outcome.bytes_down += len(data)

    try:
        while True:
            event = await _next(upstream, server[0])
            if isinstance(event, h11.InformationalResponse):
                continue  # 100 Continue: the body was sent already
            if isinstance(event, h11.Response):
                outcome.status = event.status_code
                kept = _forwardable(list(event.headers)) + [
                    (name, value)
                    for name, value in event.headers
                    if name.lower() in (b"content-length", b"transfer-encoding")
                ]
                down(
                    conn.send(
                        h11.Response(
                            status_code=event.status_code,
                            headers=[*kept, (b"Connection", b"close")],
                            reason=event.reason,
                        )
                    )
                )
            elif isinstance(event, h11.Data):
                down(conn.send(h11.Data(data=event.data)))
                await writer.drain()
            elif isinstance(event, h11.EndOfMessage):
                down(conn.send(h11.EndOfMessage()))
                await writer.drain()
                return
            else:
                return
    except h11.RemoteProtocolError as exc:
        outcome.notes.append(f"the server's response was malformed ({exc})")
