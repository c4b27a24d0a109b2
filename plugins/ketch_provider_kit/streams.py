"""Reading streaming responses (SSE and NDJSON) and an httpx client per event loop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ketch_provider_kit.errors import classify, malformed, transport_error
from ketch_provider_kit.text import origin

if TYPE_CHECKING:  # pragma: no cover
    import httpx
    from httpx_sse import ServerSentEvent


# --- streaming responses -------------------------------------------------------------------------


async def sse_events(response: httpx.Response, *, provider: str) -> AsyncIterator[ServerSentEvent]:
    """The SSE events of a streaming response, parsed by httpx-sse.

    httpx-sse already splits lines on ``\\r\\n``, ``\\r`` and ``\\n``, skips ``:`` comments,
    joins multi-line ``data:`` fields and decodes incrementally, so a character split
    across TCP reads comes out whole. Two things it leaves to us: the stream is decoded
    as UTF-8 (the SSE spec says so) even when a server declares another charset, with a
    leading BOM dropped; and a wrong ``content-type`` becomes a classified error, not an
    exception from inside the library.
    """
    from httpx_sse import EventSource

    content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    if content_type != "text/event-stream":
        raise malformed(
            provider, f"expected an event stream, got content-type {content_type or 'none'!r}"
        )
    response.encoding = "utf-8-sig"
    async for event in EventSource(response).aiter_sse():
        yield event


DONE = "[DONE]"


async def sse_json(
    response: httpx.Response, *, provider: str, secrets: tuple[str | None, ...] = ()
) -> AsyncIterator[tuple[str, Any]]:
    """``(event name, parsed data)`` for each SSE event that carries data. The literal
    ``[DONE]`` comes through as :data:`DONE`; data that is not JSON is a malformed stream."""
    async for event in sse_events(response, provider=provider):
        data = event.data.strip()
        if not data:
            continue
        if data == DONE:
            yield event.event, DONE
            continue
        try:
            parsed = json.loads(data)
        except ValueError:
            raise malformed(
                provider, "the stream sent a data line that is not JSON", data, secrets
            ) from None
        yield event.event, parsed


async def ndjson_lines(response: httpx.Response) -> AsyncIterator[str]:
    """Complete lines of an NDJSON body. Bytes are split on ``\\n`` before decoding,
    so a multi-byte character split across reads is never cut; blank lines are skipped.
    A last line without its ``\\n`` is yielded too (its JSON decides whether it is whole)."""
    buffer = b""
    async for chunk in response.aiter_bytes():
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8", errors="replace").strip()
            if line:
                yield line
    tail = buffer.decode("utf-8", errors="replace").strip()
    if tail:
        yield tail


class LoopClient:
    """An ``httpx.AsyncClient`` per running event loop.

    A client's pooled connections belong to the loop that opened them; a provider used
    from several ``asyncio.run`` calls (the CLI does one per command) gets a fresh client
    in each loop instead of a pool bound to a closed one.
    """

    def __init__(
        self, *, timeout: float, connect_timeout: float, base_url: str | None = None
    ) -> None:
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tls: _TlsContext | _NoTls = _NoTls() if _plain_http(base_url) else _TlsContext()

    def get(self) -> httpx.AsyncClient:
        from ketch_import_kit.httpx import httpx

        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop or self._client.is_closed:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self._timeout, connect=self._connect_timeout),
                follow_redirects=False,
                verify=self._tls.get(),
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._loop is asyncio.get_running_loop():
            await client.aclose()


def _plain_http(base_url: str | None) -> bool:
    """Whether every request goes to a plain ``http://`` base URL (a local server): then
    no CA bundle is loaded at all (None: the kind's default, an ``https://`` API)."""
    return base_url is not None and urlsplit(base_url.strip()).scheme.lower() == "http"


class _NoTls:
    """For a plain ``http://`` base URL: a TLS client context that trusts no CA, so the
    CA bundle (tens of milliseconds of OpenSSL) is never loaded, and a request that did
    go to an ``https://`` URL anyway fails its certificate check instead of going
    unverified."""

    def get(self) -> Any:
        import ssl

        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies, with no CA to trust


class _TlsContext:
    """httpx's default TLS context (certifi's CAs, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``:
    ``httpx.create_ssl_context``, what ``verify=True`` builds), started on a thread when
    the provider is made: loading the CA bundle takes tens of milliseconds of OpenSSL,
    which then overlaps the session's start instead of delaying the first request. If it
    failed there, ``verify=True`` lets httpx build it again (and say why) where it did."""

    def __init__(self) -> None:
        import threading

        from ketch_import_kit.httpx import httpx

        self._context: Any = True
        self._thread = threading.Thread(
            target=self._build, args=(httpx.create_ssl_context,), name="ketch-tls", daemon=True
        )
        self._thread.start()

    def _build(self, create: Any) -> None:
        try:
            self._context = create()
        except Exception:  # noqa: BLE001 - built again where the client is made, and said there
            self._context = True

    def get(self) -> Any:
        self._thread.join()
        return self._context


async def read_error_body(response: httpx.Response, limit: int = 65536) -> bytes:
    """The body of an error response, read up to ``limit`` bytes."""
    body = b""
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= limit:
            break
    return body[:limit]


@asynccontextmanager
async def open_stream(
    client: httpx.AsyncClient,
    url: str,
    *,
    provider: str,
    json_body: Any,
    headers: Mapping[str, str] | None = None,
    secrets: tuple[str | None, ...] = (),
    auth_hint: str = "",
) -> AsyncIterator[httpx.Response]:
    """POST ``json_body`` and hand over the streaming response once its status is OK.

    An error status raises a classified :class:`HttpError` (body read, connection
    released); a transport failure, before or during the body, raises a classified
    :class:`ProviderError`. Leaving the block (normally, by an error, or because the
    consuming task was cancelled) closes the response and so the connection.
    """
    from ketch_early_request_kit.handoff import answer_for
    from ketch_import_kit.httpx import httpx

    # The body serialized as httpx's ``json=`` does, so that these are the bytes sent.
    content = json.dumps(json_body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        request = client.build_request(
            "POST", url, content=content.encode("utf-8"), headers=dict(headers or {})
        )
        if "content-type" not in request.headers:  # last, where ``json=`` puts it
            request.headers["Content-Type"] = "application/json"
        # The same request sent at launch (ketch -p): its answer, not a second request.
        early = await answer_for(request, secrets)
        response = early if early is not None else await client.send(request, stream=True)
        try:
            if response.status_code >= 400:
                body = await read_error_body(response)
                raise classify(
                    response.status_code,
                    body,
                    response.headers,
                    provider=provider,
                    secrets=secrets,
                    auth_hint=auth_hint,
                )
            yield response
        finally:
            await response.aclose()
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise transport_error(
            exc, provider=provider, url=url, secrets=secrets, timeouts=client.timeout
        ) from None


async def request_json(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    provider: str,
    json_body: Any = None,
    headers: Mapping[str, str] | None = None,
    secrets: tuple[str | None, ...] = (),
    auth_hint: str = "",
    timeout: float | None = None,
) -> Any:
    """One non-streaming request whose answer is JSON; every failure classified."""
    from ketch_import_kit.httpx import httpx

    extra: dict[str, Any] = {"timeout": timeout} if timeout is not None else {}
    try:
        response = await client.request(
            method, url, json=json_body, headers=dict(headers or {}), **extra
        )
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise transport_error(
            exc, provider=provider, url=url, secrets=secrets, timeouts=client.timeout
        ) from None
    if response.status_code >= 400:
        raise classify(
            response.status_code,
            response.content[:65536],
            response.headers,
            provider=provider,
            secrets=secrets,
            auth_hint=auth_hint,
        )
    try:
        return response.json()
    except ValueError:
        raise malformed(
            provider,
            f"{origin(url)}{urlsplit(url).path} did not answer with JSON",
            response.text[:80],
            secrets,
        ) from None
