"""Fetching one URL with manual redirects, each new host re-checked through the policy.

httpx never follows redirects itself here: every ``Location`` is resolved, checked
(http/https only, a canonical host name, no credentials) and, when it leads to a host
not yet approved for this call, put to ``ctx.authorize`` as a new NETWORK access. A
denied hop ends the fetch. The body is read up to a byte cap; the whole fetch has one
deadline (time spent waiting for the person's answer is not counted).

Every connection goes through :mod:`ketch_net_kit.pinned`: the host is resolved once,
each address judged, and only judged addresses are connected to. An address on this
machine or its networks (loopback, private, link-local, cloud metadata) is asked about
-- in every profile, through ``ctx.authorize`` with the address in the access -- unless
a ``[sandbox.network] local`` rule names the host; a refused one is never connected to.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from ketch.api import Access, Effect
from ketch_import_kit.httpx import httpx
from ketch_net_kit.addresses import KIND_TEXT
from ketch_net_kit.hosts import BadHost, Host, IPAddress, canonical_host
from ketch_net_kit.resolve import Address

REDIRECTS = (301, 302, 303, 307, 308)


class BadURL(ValueError):
    pass


class Refused(Exception):
    """A redirect the policy did not allow."""


def parse_url(text: str) -> httpx.URL:
    """A URL the tool will fetch: http(s), a plain host, no credentials."""
    if any(ord(ch) < 0x21 or ord(ch) == 0x7F for ch in text):
        raise BadURL("the URL contains spaces or control characters")
    try:
        url = httpx.URL(text)
    except Exception as exc:  # noqa: BLE001 - httpx raises several types for bad URLs
        raise BadURL(f"not a valid URL ({exc})") from None
    if url.scheme not in ("http", "https"):
        raise BadURL(
            f"only http and https URLs can be fetched, not {url.scheme or 'a URL without a scheme'}"
        )
    if url.userinfo:
        raise BadURL("URLs with a user name or password are not fetched")
    raw = url.raw_host.decode("ascii", "replace")
    try:
        canonical_host(raw)
    except BadHost as exc:
        raise BadURL(f"{raw or 'an empty host'} is not a valid host name ({exc})") from None
    return url


def host_of(url: httpx.URL) -> str:
    """The URL's host, canonical (``http://2130706433/`` is 127.0.0.1)."""
    raw = url.raw_host.decode("ascii", "replace")
    try:
        return canonical_host(raw).name
    except BadHost:
        return raw.lower()


def origin_key(url: httpx.URL) -> tuple[str, int | None]:
    """What a redirect must keep to need no new approval: the host, and a non-standard port."""
    port = url.port
    return host_of(url), (None if port in (None, 80, 443) else port)


def access_for(url: httpx.URL, **extra: Any) -> Access:
    detail: dict[str, Any] = {"host": host_of(url), "scheme": url.scheme}
    if url.port is not None:
        detail["port"] = url.port
    literal = _literal(url)
    if literal is not None and literal[1]:
        detail["address"], detail["local"] = str(literal[0]), literal[1]  # asks before anything
    detail.update(extra)
    return Access(effect=Effect.NETWORK, target=str(url), detail=detail)


def _literal(url: httpx.URL) -> tuple[IPAddress, str | None] | None:
    """The URL's host when it is an address (in any spelling), with its local kind."""
    from ketch_net_kit.addresses import local_kind

    try:
        host = canonical_host(url.raw_host.decode("ascii", "replace"))
    except BadHost:
        return None
    return (host.ip, local_kind(host.ip)) if host.ip is not None else None


@dataclass
class Fetched:
    url: httpx.URL
    status: int
    reason: str
    content_type: str
    charset: str | None
    body: bytes
    truncated: bool
    redirects: list[str] = field(default_factory=list)


async def fetch(
    url: httpx.URL,
    *,
    authorize: Any,
    max_bytes: int,
    timeout: float,
    max_redirects: int,
    user_agent: str,
) -> Fetched:
    """GET ``url``; ``timeout`` bounds the network time (waiting for an approval is not counted).

    Raises TimeoutError, BadURL, Refused, or httpx.HTTPError.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout

    def remaining() -> float:
        left = deadline - loop.time()
        if left <= 0:
            raise TimeoutError
        return left

    approved = {origin_key(url)}
    redirects: list[str] = []
    headers = {
        "User-Agent": user_agent,
        "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5",
    }
    scope: list[asyncio.Timeout] = []

    async def ask(access: Access) -> bool:
        """``authorize``, with the person's thinking time added to the deadline."""
        nonlocal deadline
        asked_at = loop.time()
        allowed = bool(await authorize(access))
        waited = loop.time() - asked_at
        deadline += waited
        for running in scope:
            when = running.when()
            if when is not None:
                running.reschedule(when + waited)
        return allowed

    literal = _literal(url)
    local_ok = {(host_of(url), str(literal[0]))} if literal is not None and literal[1] else set()

    async def check(host: Host, port: int, addresses: list[Address]) -> list[IPAddress]:
        usable: list[IPAddress] = []
        for address in addresses:
            key = (host.name, str(address.ip))
            if address.local is not None and key not in local_ok:
                access = Access(
                    effect=Effect.NETWORK,
                    target=f"http://{host.authority}:{port}/",
                    detail={
                        "host": host.name,
                        "port": port,
                        "address": str(address.ip),
                        "local": address.local,
                    },
                )
                if not await ask(access):
                    continue
                local_ok.add(key)
            usable.append(address.ip)
        if not usable:
            first = addresses[0]
            raise Refused(
                f"{host} is {first.ip}, {KIND_TEXT.get(first.local or '', 'a local address')}, "
                "and reaching it was not allowed"
            )
        return usable

    from ketch_net_kit.pinned import checked_transport

    async with httpx.AsyncClient(
        follow_redirects=False,
        timeout=httpx.Timeout(timeout),
        headers=headers,
        transport=checked_transport(check),
    ) as client:
        current = url
        for _ in range(max_redirects + 1):
            request = client.build_request("GET", current)
            async with asyncio.timeout_at(loop.time() + remaining()) as running:
                scope[:] = [running]
                response = await client.send(request, stream=True)
            scope.clear()
            try:
                location = response.headers.get("location")
                if response.status_code in REDIRECTS and location:
                    await response.aclose()
                    try:
                        target = parse_url(str(current.join(location)))
                    except BadURL as exc:
                        raise BadURL(
                            f"{current} redirected to {location!r}, which cannot be followed: {exc}"
                        ) from None
                    if origin_key(target) not in approved:
                        allowed = await ask(access_for(target, redirected_from=str(current)))
                        if not allowed:
                            raise Refused(
                                f"{current} redirected to {target} (host {host_of(target)}), and that host was not allowed"
                            )
                        approved.add(origin_key(target))
                        hop = _literal(target)
                        if hop is not None and hop[1]:  # asked about with its address just now
                            local_ok.add((host_of(target), str(hop[0])))
                    redirects.append(str(current))
                    current = target
                    continue
                body, truncated = await asyncio.wait_for(
                    _read_capped(response, max_bytes), remaining()
                )
                media = response.headers.get("content-type", "").split(";")[0].strip().lower()
                return Fetched(
                    current,
                    response.status_code,
                    response.reason_phrase,
                    media,
                    response.charset_encoding,
                    body,
                    truncated,
                    redirects,
                )
            finally:
                await response.aclose()
    raise BadURL(f"more than {max_redirects} redirects, starting at {url}")


async def _read_capped(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        parts.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            return b"".join(parts)[:max_bytes], True
    return b"".join(parts), False
