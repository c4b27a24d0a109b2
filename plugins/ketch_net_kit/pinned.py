"""An httpx transport that connects only to addresses a check has judged.

httpcore asks its network backend for a TCP connection to ``(host, port)``; this
backend resolves the host once (:func:`ketch_net_kit.resolve.resolve`), hands the
addresses to ``check`` -- which may refuse, ask, or drop some -- and connects to what
``check`` returned, by address. TLS still verifies the certificate for the *name*
(httpcore passes the URL's host as ``server_hostname``), and the ``Host`` header is
the URL's. Every new connection goes through it, so a redirect to another host, or
a name that resolves elsewhere the second time (DNS rebinding), is judged again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import httpcore

from ketch_import_kit.httpx import httpx
from ketch_net_kit.hosts import BadHost, Host, IPAddress, canonical_host
from ketch_net_kit.resolve import Address, resolve

# (host, port, addresses) -> the addresses that may be connected to (raise to refuse)
Check = Callable[[Host, int, list[Address]], Awaitable[list[IPAddress]]]


class CheckedBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, check: Check, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self.check = check
        self.inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            canonical = canonical_host(host)
        except BadHost as exc:
            raise httpcore.ConnectError(str(exc)) from None
        addresses = await self.check(canonical, port, await resolve(canonical, port))
        last: Exception | None = None
        for ip in addresses:
            try:
                return await self.inner.connect_tcp(
                    str(ip),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout, OSError) as exc:
                last = exc
        raise httpcore.ConnectError(f"could not connect to {canonical}: {last}")

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not reached this way")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


def checked_transport(check: Check) -> httpx.AsyncBaseTransport:
    """httpx's own transport, its connection pool on :class:`CheckedBackend`."""
    transport = httpx.AsyncHTTPTransport()
    pool = transport._pool  # httpx builds the pool; only its network backend is ours
    pool._network_backend = CheckedBackend(check)
    return transport
