"""Fetching one URL with manual redirects, each new host re-checked through the policy.

httpx never follows redirects itself here: every ``Location`` is resolved, checked
(http/https only, a plain host name, no credentials) and, when it leads to a host not
yet approved for this call, put to ``ctx.authorize`` as a new NETWORK access. A denied
hop ends the fetch. The body is read up to a byte cap; the whole fetch has one deadline.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any

from ketch.tools import Access, Effect
from ketch_import_kit.httpx import httpx

REDIRECTS = (301, 302, 303, 307, 308)
_HOST = re.compile(
    r"^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.?$|^[0-9a-f:.]+$"
)


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
    host = host_of(url)
    if not host or not _HOST.match(host):
        raise BadURL(f"{host or 'an empty host'} is not a valid host name")
    return url


def host_of(url: httpx.URL) -> str:
    return url.raw_host.decode("ascii", "replace").lower()


def origin_key(url: httpx.URL) -> tuple[str, int | None]:
    """What a redirect must keep to need no new approval: the host, and a non-standard port."""
    port = url.port
    return host_of(url), (None if port in (None, 80, 443) else port)


def access_for(url: httpx.URL, **extra: Any) -> Access:
    detail: dict[str, Any] = {"host": host_of(url), "scheme": url.scheme}
    if url.port is not None:
        detail["port"] = url.port
    detail.update(extra)
    return Access(effect=Effect.NETWORK, target=str(url), detail=detail)


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
    async with httpx.AsyncClient(
        follow_redirects=False, timeout=httpx.Timeout(timeout), headers=headers
    ) as client:
        current = url
        for _ in range(max_redirects + 1):
            request = client.build_request("GET", current)
            response = await asyncio.wait_for(client.send(request, stream=True), remaining())
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
                        asked_at = loop.time()
                        allowed = await authorize(access_for(target, redirected_from=str(current)))
                        deadline += (
                            loop.time() - asked_at
                        )  # the user's thinking time is not network time
                        if not allowed:
                            raise Refused(
                                f"{current} redirected to {target} (host {host_of(target)}), and that host was not allowed"
                            )
                        approved.add(origin_key(target))
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
