"""Shared helpers for HTTP provider plugins (bundled or third-party).

Every provider must classify failures the same way for the loop's single retry policy
to work, so the rules live here once: error bodies of every shape (``{"error": {...}}``,
``{"error": "..."}``, vLLM's top-level form, HTML from a proxy), status and error-type
to :class:`~ketch.providers.ErrorKind`, ``retry-after-ms`` / ``retry-after``,
the context-overflow classifier with its limit numbers, and transport failures. Also:
reading SSE events as UTF-8 whatever the headers claim, a ``<think>`` tag splitter for
servers that leak reasoning into the text, a small table of known context windows,
and an httpx client that follows the running event loop.

Nothing here sends a request on its own or knows a concrete provider's wire format.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import re
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ketch.providers import ErrorKind, ProviderError, ProviderEvent, ReasoningDelta, TextDelta

if TYPE_CHECKING:  # pragma: no cover
    import httpx
    from httpx_sse import ServerSentEvent


# --- text hygiene -----------------------------------------------------------------------


def redact(text: str, secrets: tuple[str | None, ...] = ()) -> str:
    """``text`` with every secret replaced by ``***`` (whole and each line of it)."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def one_line(text: str, limit: int = 300) -> str:
    """Whitespace collapsed to single spaces, cut to ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def origin(url: str) -> str:
    """``scheme://host:port`` of a URL: no path, and never any user:password part."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}" if parts.scheme else url


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else ``{}`` (wire data is never trusted to have a shape)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else ``[]``."""
    return value if isinstance(value, list) else []


def as_int(value: Any) -> int:
    """``value`` when it is a JSON integer (not a bool), else 0: token counts."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def config_extra(config: Any, name: str, default: Any = None) -> Any:
    """A key of a ``[providers.NAME]`` table beyond the common ones (``temperature = 0.2``)."""
    return (getattr(config, "model_extra", None) or {}).get(name, default)


# --- retry hints --------------------------------------------------------------------------


def retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds the server asks us to wait: ``retry-after-ms`` first, then ``retry-after``
    (seconds, possibly fractional, or an HTTP date). None when absent or unreadable."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            value = float(ms) / 1000
            if value >= 0:
                return value
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        value = float(raw)
        return value if value >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


# --- error bodies -----------------------------------------------------------------------------


@dataclass
class ErrorDetail:
    """What an error body says, whatever its shape."""

    message: str = ""
    type: str | None = None
    code: str | None = None
    param: str | None = None
    request_id: str | None = None
    n_ctx: int | None = None
    n_prompt_tokens: int | None = None
    status: int | None = None  # a status the body itself carries (OpenRouter code, Ollama status)
    is_json: bool = True


def error_detail(body: Any) -> ErrorDetail:
    """Parse an error body: bytes, text or an already-decoded JSON value."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    if isinstance(body, str):
        text = body.strip()
        try:
            body = json.loads(text) if text else {}
        except ValueError:
            return ErrorDetail(message=text, is_json=False)
    if isinstance(body, str):
        return ErrorDetail(message=body)
    if not isinstance(body, dict):
        return ErrorDetail(message=json.dumps(body)[:500])
    detail = ErrorDetail(request_id=_str(body.get("request_id")))
    error = body.get("error")
    source: dict[str, Any]
    if isinstance(error, dict):
        source = error
    elif isinstance(error, str):
        detail.message = error  # Ollama: {"error": "..."}
        source = {}
    else:
        source = body  # vLLM: {"object":"error","message":...,"type":...,"code":400}
    detail.message = detail.message or _str(source.get("message")) or _str(source.get("detail")) or ""
    kind = _str(source.get("type"))
    detail.type = kind if kind != "error" else None
    detail.param = _str(source.get("param"))
    code = source.get("code")
    if isinstance(code, int) and not isinstance(code, bool):
        detail.status = code if 100 <= code <= 599 else None
        detail.code = str(code)
    elif isinstance(code, str) and code:
        detail.code = code
    status = body.get("status", source.get("status"))
    if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 599:
        detail.status = status
    detail.n_ctx = _int(source.get("n_ctx"))
    detail.n_prompt_tokens = _int(source.get("n_prompt_tokens"))
    metadata = source.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("raw"), str):
        detail.message = f"{detail.message} ({metadata['raw']})" if detail.message else metadata["raw"]
    return detail


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- context overflow ---------------------------------------------------------------------------

_OVERFLOW_PHRASES = (
    "maximum context length",
    "context window",
    "context length",
    "prompt is too long",
    "exceed context limit",
    "exceeds the available context size",
    "prompt is longer than the context length",
    "input length exceeds the context length",
)


def is_context_overflow(detail: ErrorDetail) -> bool:
    """The classifier of errors.md §6 (the caller checks the status is 400/413 or mid-stream)."""
    if detail.code == "context_length_exceeded" or detail.type == "exceed_context_size_error":
        return True
    message = detail.message.lower()
    if any(phrase in message for phrase in _OVERFLOW_PHRASES):
        return True
    return "too large" in message and "max_tokens" in message


_LIMIT_PATTERNS = (
    re.compile(r"(\d+) tokens > (\d+) maximum"),  # Anthropic: used, limit
    re.compile(r"(\d+) \+ \d+ > (\d+)"),  # Anthropic (older): input + max_tokens > limit
    re.compile(r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)"),  # llama.cpp
)


def context_numbers(detail: ErrorDetail) -> tuple[int | None, int | None]:
    """``(limit, used)`` token counts an overflow error states, when it states them."""
    if detail.n_ctx:
        return detail.n_ctx, detail.n_prompt_tokens
    message = detail.message
    for pattern in _LIMIT_PATTERNS:
        found = pattern.search(message)
        if found:
            return int(found.group(2)), int(found.group(1))
    limit = re.search(r"maximum context length is (\d+) tokens", message)
    if limit:
        used = re.search(r"(?:requested(?: about)?|resulted in) (\d+) tokens", message)
        return int(limit.group(1)), int(used.group(1)) if used else None
    window = re.search(r"context (?:window|length) of (\d+)", message)
    return (int(window.group(1)), None) if window else (None, None)


# --- classification -----------------------------------------------------------------------------

# Error types (OpenAI, Anthropic, llama.cpp) mapped to the status they stand for, so an
# error that arrives mid-stream (HTTP status 200) is classified like its HTTP twin.
TYPE_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "exceed_context_size_error": 400,
    "context_length_exceeded": 400,
    "authentication_error": 401,
    "invalid_api_key": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "model_not_found": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "api_error": 500,
    "server_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}

_QUOTA_MARKERS = ("insufficient_quota", "billing_error")


class HttpError(ProviderError):
    """A :class:`ProviderError` from an error response or error event, keeping what the
    body said (``detail``) so a provider can recognise errors it has a fallback for."""

    detail: ErrorDetail | None = None


def classify(
    status: int | None,
    body: Any,
    headers: Mapping[str, str] | None = None,
    *,
    provider: str,
    secrets: tuple[str | None, ...] = (),
    auth_hint: str = "",
    mid_stream: bool = False,
) -> HttpError:
    """A :class:`ProviderError` for an HTTP error response, or for an error event that
    arrived mid-stream (``mid_stream=True``; ``status`` then comes from the error type).

    ``auth_hint`` says how to provide a key (``set OPENAI_API_KEY or run ...``); it is
    added to auth failures. Every secret is redacted from the message.
    """
    headers = headers or {}
    detail = body if isinstance(body, ErrorDetail) else error_detail(body)
    if mid_stream:
        status = detail.status or TYPE_STATUS.get(detail.code or "") or TYPE_STATUS.get(detail.type or "") or 500
    assert status is not None
    hint = retry_after(headers)
    kind, retryable, what, advice = _kind_for(status, detail, headers, auth_hint)
    limit = used = None
    if kind == ErrorKind.CONTEXT_LENGTH:
        limit, used = context_numbers(detail)
    if kind == ErrorKind.QUOTA and status == 402 and hint is not None:
        retryable = True  # OpenRouter: 402 with Retry-After may be retried
    should = headers.get("x-should-retry")
    if should in ("true", "false") and kind not in (ErrorKind.CONTEXT_LENGTH, ErrorKind.AUTH):
        retryable = should == "true"
    server_says = detail.message or ("" if detail.is_json else "(empty body)")
    if not detail.is_json:
        server_says = f"non-JSON body: {server_says}"
    code = f", {detail.code}" if detail.code and detail.code != str(status) else ""
    where = "mid-stream error" if mid_stream else f"HTTP {status}{code}"
    message = f"{provider}: {what} ({where})"
    if server_says:
        message += f": {one_line(server_says, 240)}"
    if detail.request_id:
        message += f" [request {detail.request_id}]"
    if advice:
        message = message.rstrip(". ") + f". {advice}"
    error = HttpError(
        kind,
        one_line(redact(message, secrets), 600),
        retryable=retryable,
        status=None if mid_stream else status,
        retry_after=hint,
        request_id=detail.request_id,
        context_limit=limit,
        context_used=used,
    )
    error.detail = detail
    return error


def _kind_for(status: int, detail: ErrorDetail, headers: Mapping[str, str], auth_hint: str) -> tuple[ErrorKind, bool, str, str]:
    """(kind, retryable, what happened, what to do) for a status and what the body says."""
    markers = {detail.code or "", detail.type or ""}
    message = detail.message.lower()
    if status in (400, 413, 422) and is_context_overflow(detail):
        return ErrorKind.CONTEXT_LENGTH, False, "the request is longer than the model's context window", "Compact the conversation or use a model with a larger window"
    if status == 401:
        return ErrorKind.AUTH, False, "the API key was rejected", (auth_hint[:1].upper() + auth_hint[1:]) if auth_hint else "Check the API key"
    if status == 402 or markers & set(_QUOTA_MARKERS) or "extra usage is required" in message:
        return ErrorKind.QUOTA, False, "out of credits or quota", "Check the account's billing and limits"
    if status == 403:
        return ErrorKind.PERMISSION, False, "access denied", "Check that the key may use this model"
    if status == 404:
        return ErrorKind.NOT_FOUND, False, "not found", "Check the model name (`ketch models` lists them) and base_url"
    if status == 408:
        return ErrorKind.TIMEOUT, True, "the server timed out", ""
    if status == 409:
        return ErrorKind.SERVER, True, "conflict", ""
    if status == 429:
        return ErrorKind.RATE_LIMIT, True, "rate limited", ""
    if status == 413:
        return ErrorKind.BAD_REQUEST, False, "the request is too large", "Shorten the conversation"
    if status == 529 or "overloaded_error" in markers or (status == 503 and "busy" in message):
        return ErrorKind.OVERLOADED, True, "the server is overloaded", ""
    if status == 504 or "timeout_error" in markers:
        return ErrorKind.TIMEOUT, True, "the server timed out", ""
    if status >= 500 or status == 499:
        return ErrorKind.SERVER, True, "server error", ""
    return ErrorKind.BAD_REQUEST, False, "the request was refused", ""


def transport_error(exc: BaseException, *, provider: str, url: str, secrets: tuple[str | None, ...] = ()) -> ProviderError:
    """A :class:`ProviderError` for an httpx transport failure (no response at all)."""
    import httpx

    where = origin(url)
    reason = one_line(redact(str(exc) or type(exc).__name__, secrets), 160)
    if isinstance(exc, httpx.ConnectTimeout):
        return ProviderError(ErrorKind.TIMEOUT, f"{provider}: timed out connecting to {where}", retryable=True)
    if isinstance(exc, httpx.ConnectError):
        return ProviderError(
            ErrorKind.NETWORK,
            f"{provider}: cannot connect to {where} ({_connect_reason(exc, reason)}); is the server running and base_url right?",
            retryable=True,
        )
    if isinstance(exc, httpx.TimeoutException):
        return ProviderError(ErrorKind.TIMEOUT, f"{provider}: {where} stopped answering ({type(exc).__name__})", retryable=True)
    if isinstance(exc, httpx.RemoteProtocolError):
        return ProviderError(ErrorKind.NETWORK, f"{provider}: the connection to {where} broke mid-response ({reason})", retryable=True)
    if isinstance(exc, httpx.LocalProtocolError):
        return ProviderError(
            ErrorKind.CONFIG,
            f"{provider}: could not send the request to {where}: an invalid header value (does the API key contain spaces or line breaks?)",
        )
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
        return ProviderError(ErrorKind.CONFIG, f"{provider}: invalid base_url {where!r}: {reason}")
    return ProviderError(ErrorKind.NETWORK, f"{provider}: network error talking to {where} ({reason})", retryable=True)


def _connect_reason(exc: BaseException, reason: str) -> str:
    """What a connect failure really was: httpx wraps the OS error a few levels down."""
    import errno
    import socket

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, ConnectionRefusedError) or getattr(seen, "errno", None) == errno.ECONNREFUSED:
            return "connection refused"
        if isinstance(seen, socket.gaierror):
            return "unknown host"
        seen = seen.__cause__ or seen.__context__
    return reason


def malformed(provider: str, what: str, sample: str = "", secrets: tuple[str | None, ...] = ()) -> ProviderError:
    """The stream broke its protocol (truncated, garbage): retryable, the turn is discarded."""
    tail = f": {one_line(redact(sample, secrets), 120)!r}" if sample else ""
    return ProviderError(ErrorKind.MALFORMED_STREAM, f"{provider}: {what}{tail}", retryable=True)


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
        raise malformed(provider, f"expected an event stream, got content-type {content_type or 'none'!r}")
    response.encoding = "utf-8-sig"
    async for event in EventSource(response).aiter_sse():
        yield event


DONE = "[DONE]"


async def sse_json(response: httpx.Response, *, provider: str, secrets: tuple[str | None, ...] = ()) -> AsyncIterator[tuple[str, Any]]:
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
            raise malformed(provider, "the stream sent a data line that is not JSON", data, secrets) from None
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

    def __init__(self, *, timeout: float, connect_timeout: float) -> None:
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> httpx.AsyncClient:
        import httpx

        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop or self._client.is_closed:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self._timeout, connect=self._connect_timeout),
                follow_redirects=False,
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._loop is asyncio.get_running_loop():
            await client.aclose()


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
    import httpx

    try:
        async with client.stream("POST", url, json=json_body, headers=dict(headers or {})) as response:
            if response.status_code >= 400:
                body = await read_error_body(response)
                raise classify(response.status_code, body, response.headers, provider=provider, secrets=secrets, auth_hint=auth_hint)
            yield response
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise transport_error(exc, provider=provider, url=url, secrets=secrets) from None


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
    import httpx

    extra: dict[str, Any] = {"timeout": timeout} if timeout is not None else {}
    try:
        response = await client.request(method, url, json=json_body, headers=dict(headers or {}), **extra)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise transport_error(exc, provider=provider, url=url, secrets=secrets) from None
    if response.status_code >= 400:
        raise classify(response.status_code, response.content[:65536], response.headers, provider=provider, secrets=secrets, auth_hint=auth_hint)
    try:
        return response.json()
    except ValueError:
        raise malformed(provider, f"{origin(url)}{urlsplit(url).path} did not answer with JSON", response.text[:80], secrets) from None


# --- tool arguments ------------------------------------------------------------------------------


def parse_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """``(input, None)``, or ``({}, why)`` when the model's arguments are not a JSON object
    (truncated by max tokens, malformed). ``""`` is ``{}`` (a tool without arguments)."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        return {}, f"invalid JSON arguments ({reason}): {raw[:60]!r}"
    if not isinstance(value, dict):
        return {}, f"arguments are JSON but not an object: {raw[:60]!r}"
    return value, None


# --- <think> tags ------------------------------------------------------------------------------------

OPEN_TAG, CLOSE_TAG = "<think>", "</think>"


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest end of ``text`` that could be the start of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0


class ThinkTagSplitter:
    """Separates ``<think>…</think>`` reasoning from answer text in a streamed content field.

    Stateful across chunks: a tag split over two chunks (``"<th"`` + ``"ink>"``) is one tag.
    Only a ``<think>`` at the very start of the content (after whitespace) opens reasoning;
    with ``starts_in_reasoning`` (templates that pre-fill ``<think>``, such as DeepSeek-R1's)
    the content is reasoning until ``</think>``. Whitespace right after ``</think>`` is dropped.
    """

    def __init__(self, *, starts_in_reasoning: bool = False) -> None:
        self.state = "implicit" if starts_in_reasoning else "start"
        self.pending = ""
        self.closed = False  # a </think> was seen

    def feed(self, text: str) -> list[tuple[str, str]]:
        """Pieces ``("reasoning"|"text", chunk)`` that are certain so far."""
        self.pending += text
        out: list[tuple[str, str]] = []
        while True:
            if self.state in ("start", "implicit"):
                stripped = self.pending.lstrip()
                if not stripped or (OPEN_TAG.startswith(stripped) and stripped != OPEN_TAG):
                    return out  # nothing decisive yet
                if stripped.startswith(OPEN_TAG):
                    self.pending = stripped[len(OPEN_TAG):]
                    self.state = "reasoning"
                else:
                    self.state = "reasoning" if self.state == "implicit" else "text"
                continue
            if self.state == "reasoning":
                index = self.pending.find(CLOSE_TAG)
                if index >= 0:
                    if index:
                        out.append(("reasoning", self.pending[:index]))
                    self.pending = self.pending[index + len(CLOSE_TAG):]
                    self.state, self.closed = "after", True
                    continue
                keep = _partial_suffix(self.pending, CLOSE_TAG)
                ready = self.pending[: len(self.pending) - keep]
                if ready:
                    out.append(("reasoning", ready))
                self.pending = self.pending[len(ready):]
                return out
            if self.state == "after":
                stripped = self.pending.lstrip()
                if not stripped:
                    self.pending = ""
                    return out
                self.pending, self.state = stripped, "text"
                continue
            if self.pending:
                out.append(("text", self.pending))
                self.pending = ""
            return out

    def flush(self) -> list[tuple[str, str]]:
        """Whatever is still held back, at the end of the stream."""
        held, self.pending = self.pending, ""
        if not held or self.state == "after":
            return []
        return [("reasoning" if self.state in ("reasoning", "implicit") else "text", held)]


class ContentReader:
    """One streamed content field read into answer text and reasoning.

    Content goes straight to ``text`` while the server separates reasoning itself (it
    sent a reasoning field before any content); otherwise through a
    :class:`ThinkTagSplitter`, once started kept for the rest of the stream. Pieces are
    appended to the caller's ``text``/``reasoning`` lists; the events are returned.
    """

    def __init__(self, text: list[str], reasoning: list[str], *, starts_in_reasoning: bool = False) -> None:
        self.text, self.reasoning = text, reasoning
        self.starts_in_reasoning = starts_in_reasoning
        self.splitter: ThinkTagSplitter | None = None
        self.tagged = False  # some reasoning came from <think> tags

    def feed(self, content: str, *, server_separates: bool) -> list[ProviderEvent]:
        if server_separates and self.splitter is None:
            self.text.append(content)
            return [TextDelta(text=content)]
        if self.splitter is None:
            self.splitter = ThinkTagSplitter(starts_in_reasoning=self.starts_in_reasoning)
        return self._events(self.splitter.feed(content))

    def flush(self) -> list[ProviderEvent]:
        return self._events(self.splitter.flush()) if self.splitter is not None else []

    def _events(self, pieces: list[tuple[str, str]]) -> list[ProviderEvent]:
        events: list[ProviderEvent] = []
        for kind, piece in pieces:
            if kind == "reasoning":
                self.tagged = True
                self.reasoning.append(piece)
                events.append(ReasoningDelta(text=piece))
            else:
                self.text.append(piece)
                events.append(TextDelta(text=piece))
        return events


def split_late_close_tag(text: str) -> tuple[str, str] | None:
    """For a finished answer with a ``</think>`` but no ``<think>`` (a template pre-filled
    the opening tag and the stream carried only the closing one): ``(reasoning, text)``."""
    if CLOSE_TAG not in text or OPEN_TAG in text:
        return None
    reasoning, _, answer = text.partition(CLOSE_TAG)
    return reasoning, answer.lstrip()


# --- known models ------------------------------------------------------------------------------------

# Context windows of well-known models, matched by the longest prefix of the model id
# (after any ``vendor/`` prefix, as OpenRouter spells them). Config wins over this table.
KNOWN_CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "chatgpt-4o": 128_000,
    "o1-mini": 128_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "codex-mini": 200_000,
    "gpt-oss": 131_072,
    "claude-": 200_000,
    "deepseek-chat": 128_000,
    "deepseek-reasoner": 128_000,
    "deepseek-coder": 128_000,
    "deepseek-r1": 128_000,
    "deepseek-v3": 128_000,
    "qwen3-coder": 262_144,
    "qwen2.5-coder": 32_768,
    "kimi-k2": 131_072,
    "glm-4.5": 131_072,
    "glm-4.6": 200_000,
    "grok-4": 256_000,
    "grok-3": 131_072,
    "gemini-2.5": 1_048_576,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama-3.1": 131_072,
    "llama-3.3": 131_072,
    "mistral-large": 131_072,
    "codestral": 256_000,
    "devstral": 131_072,
}


def known_context_window(model: str | None) -> int | None:
    """The context window of a well-known model id, or None."""
    if not model:
        return None
    name = model.rsplit("/", 1)[-1].lower()
    best = max((prefix for prefix in KNOWN_CONTEXT_WINDOWS if name.startswith(prefix)), key=len, default=None)
    return KNOWN_CONTEXT_WINDOWS[best] if best else None
