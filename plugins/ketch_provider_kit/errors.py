"""Classifying provider failures: error bodies of every shape, retry hints, context overflow, transport errors."""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ketch.api import ErrorKind, ProviderError
from ketch_provider_kit.text import one_line, origin, redact

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
    raw: Any = None  # the decoded body, for a provider that reads more of it (Gemini's details)


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
    detail = ErrorDetail(request_id=_str(body.get("request_id")), raw=body)
    error = body.get("error")
    source: dict[str, Any]
    if isinstance(error, dict):
        source = error
    elif isinstance(error, str):
        detail.message = error  # Ollama: {"error": "..."}
        source = {}
    else:
        source = body  # vLLM: {"object":"error","message":...,"type":...,"code":400}
    detail.message = (
        detail.message or _str(source.get("message")) or _str(source.get("detail")) or ""
    )
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
        detail.message = (
            f"{detail.message} ({metadata['raw']})" if detail.message else metadata["raw"]
        )
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
    "exceeds the maximum number of tokens allowed",  # Gemini
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
    re.compile(
        r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)"
    ),  # llama.cpp
    re.compile(
        r"input token count \((\d+)\) exceeds the maximum number of tokens allowed \((\d+)\)"
    ),  # Gemini
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
        status = (
            detail.status
            or TYPE_STATUS.get(detail.code or "")
            or TYPE_STATUS.get(detail.type or "")
            or 500
        )
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


def _kind_for(
    status: int, detail: ErrorDetail, headers: Mapping[str, str], auth_hint: str
) -> tuple[ErrorKind, bool, str, str]:
    """(kind, retryable, what happened, what to do) for a status and what the body says."""
    markers = {detail.code or "", detail.type or ""}
    message = detail.message.lower()
    if status in (400, 413, 422) and is_context_overflow(detail):
        return (
            ErrorKind.CONTEXT_LENGTH,
            False,
            "the request is longer than the model's context window",
            "Compact the conversation or use a model with a larger window",
        )
    if status == 401:
        return (
            ErrorKind.AUTH,
            False,
            "the API key was rejected",
            (auth_hint[:1].upper() + auth_hint[1:]) if auth_hint else "Check the API key",
        )
    if status == 402 or markers & set(_QUOTA_MARKERS) or "extra usage is required" in message:
        return (
            ErrorKind.QUOTA,
            False,
            "out of credits or quota",
            "Check the account's billing and limits",
        )
    if status == 403:
        return ErrorKind.PERMISSION, False, "access denied", "Check that the key may use this model"
    if status == 404:
        return (
            ErrorKind.NOT_FOUND,
            False,
            "not found",
            "Check the model name (`ketch models` lists them) and base_url",
        )
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


def transport_error(
    exc: BaseException,
    *,
    provider: str,
    url: str,
    secrets: tuple[str | None, ...] = (),
    timeouts: Any = None,
) -> ProviderError:
    """A :class:`ProviderError` for an httpx transport failure (no response at all).

    A connect or read deadline is a retryable ``network`` error that names itself and
    the setting that controls it (``timeouts``: the client's ``httpx.Timeout``).
    """
    from ketch_import_kit.httpx import httpx

    where = origin(url)
    reason = one_line(redact(str(exc) or type(exc).__name__, secrets), 160)
    if isinstance(exc, httpx.ConnectTimeout):
        after = _seconds(getattr(timeouts, "connect", None))
        return ProviderError(
            ErrorKind.NETWORK,
            f"{provider}: could not connect to {where}{after} (connect_timeout in [providers.{provider}])",
            retryable=True,
        )
    if isinstance(exc, httpx.ReadTimeout):
        after = _seconds(getattr(timeouts, "read", None))
        return ProviderError(
            ErrorKind.NETWORK,
            f"{provider}: no data from {where}{after} (read_timeout in [providers.{provider}])",
            retryable=True,
        )
    if isinstance(exc, httpx.ConnectError):
        return ProviderError(
            ErrorKind.NETWORK,
            f"{provider}: cannot connect to {where} ({_connect_reason(exc, reason)}); is the server running and base_url right?",
            retryable=True,
        )
    if isinstance(exc, httpx.TimeoutException):
        return ProviderError(
            ErrorKind.TIMEOUT,
            f"{provider}: {where} stopped answering ({type(exc).__name__})",
            retryable=True,
        )
    if isinstance(exc, httpx.RemoteProtocolError):
        return ProviderError(
            ErrorKind.NETWORK,
            f"{provider}: the connection to {where} broke mid-response ({reason})",
            retryable=True,
        )
    if isinstance(exc, httpx.LocalProtocolError):
        return ProviderError(
            ErrorKind.CONFIG,
            f"{provider}: could not send the request to {where}: an invalid header value (does the API key contain spaces or line breaks?)",
        )
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
        return ProviderError(ErrorKind.CONFIG, f"{provider}: invalid base_url {where!r}: {reason}")
    return ProviderError(
        ErrorKind.NETWORK,
        f"{provider}: network error talking to {where} ({reason})",
        retryable=True,
    )


def _seconds(value: Any) -> str:
    return f" for {value:g} s" if isinstance(value, int | float) else ""


def _connect_reason(exc: BaseException, reason: str) -> str:
    """What a connect failure really was: httpx wraps the OS error a few levels down."""
    import errno
    import socket

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if (
            isinstance(seen, ConnectionRefusedError)
            or getattr(seen, "errno", None) == errno.ECONNREFUSED
        ):
            return "connection refused"
        if isinstance(seen, socket.gaierror):
            return "unknown host"
        seen = seen.__cause__ or seen.__context__
    return reason


def malformed(
    provider: str, what: str, sample: str = "", secrets: tuple[str | None, ...] = ()
) -> ProviderError:
    """The stream broke its protocol (truncated, garbage): retryable, the turn is discarded."""
    tail = f": {one_line(redact(sample, secrets), 120)!r}" if sample else ""
    return ProviderError(ErrorKind.MALFORMED_STREAM, f"{provider}: {what}{tail}", retryable=True)
