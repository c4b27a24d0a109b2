"""Gemini's error bodies (google.rpc.Status) refined on top of the kit's classification.

What the kit cannot know from the status alone (gemini_stream.md §7):

* an invalid key is a **400** ``INVALID_ARGUMENT`` with ``ErrorInfo.reason`` ``API_KEY_INVALID``: auth;
* a 429 says how long to wait in ``RetryInfo.retryDelay`` (``"41s"``, ``"3.9s"``) or only in
  its message ("Please retry in 44.09s"); that becomes ``retry_after``;
* a per-day quota, ``MODEL_CAPACITY_EXHAUSTED`` or a wait of more than a few minutes is
  not worth retrying: quota, not retried;
* a missing ``thought_signature`` is named as such (it is a bug to report, not a bad prompt).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ketch.api import ErrorKind
from ketch_provider_kit import HttpError, as_dict, as_list, classify

_DELAY = re.compile(r"^(\d+(?:\.\d+)?)s$")
_MESSAGE_DELAY = re.compile(r"retry in (\d+(?:\.\d+)?)\s*(ms|s)\b", re.IGNORECASE)
LONGEST_RETRY = 300.0  # seconds: a longer wait means the quota is gone for now


def _details(body: Any) -> list[dict[str, Any]]:
    error = as_dict(as_dict(body).get("error"))
    return [d for d in as_list(error.get("details")) if isinstance(d, dict)]


def _of_type(details: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [d for d in details if str(d.get("@type", "")).endswith(f".{name}")]


def retry_delay(body: Any, message: str) -> float | None:
    """Seconds from ``RetryInfo.retryDelay``, else from "Please retry in Ns" in the message."""
    for info in _of_type(_details(body), "RetryInfo"):
        found = _DELAY.match(str(info.get("retryDelay", "")).strip())
        if found:
            return float(found.group(1))
    said = _MESSAGE_DELAY.search(message)
    if said:
        value = float(said.group(1))
        return value / 1000 if said.group(2).lower() == "ms" else value
    return None


def gemini_error(
    status: int | None,
    body: Any,
    headers: Mapping[str, str] | None = None,
    *,
    provider: str,
    secrets: tuple[str | None, ...] = (),
    auth_hint: str = "",
) -> HttpError:
    """A classified error for an error response (``status``) or a mid-stream error payload."""
    error = classify(
        status,
        body,
        headers,
        provider=provider,
        secrets=secrets,
        auth_hint=auth_hint,
        mid_stream=status is None,
    )
    return refine(error, auth_hint)


def refine(error: HttpError, auth_hint: str = "") -> HttpError:
    """Adjust a kit classification with what Gemini's ``details`` say."""
    if error.detail is None:
        return error
    body = error.detail.raw
    details = _details(body)
    reasons = {str(d.get("reason", "")) for d in _of_type(details, "ErrorInfo")}
    message = error.detail.message
    if reasons & {"API_KEY_INVALID", "API_KEY_EXPIRED"} or "api key not valid" in message.lower():
        error.kind, error.retryable = ErrorKind.AUTH, False
        hint = (auth_hint[:1].upper() + auth_hint[1:]) if auth_hint else "Check the API key"
        if hint not in error.message:
            error.message = f"{error.message.rstrip('. ')}. {hint}"
        return error
    if "thought_signature" in message:
        error.message += (
            " (ketch did not replay a thought signature Gemini needs: please report this)"
        )
        return error
    if error.kind == ErrorKind.RATE_LIMIT:
        delay = retry_delay(body, message)
        if delay is not None and error.retry_after is None:
            error.retry_after = delay
        quota_ids = " ".join(
            str(v.get("quotaId", ""))
            for q in _of_type(details, "QuotaFailure")
            for v in as_list(q.get("violations"))
            if isinstance(v, dict)
        )
        daily = "PerDay" in quota_ids
        capacity = (
            "MODEL_CAPACITY_EXHAUSTED" in reasons or "exhausted your capacity" in message.lower()
        )
        too_long = error.retry_after is not None and error.retry_after > LONGEST_RETRY
        if daily or capacity or too_long:
            error.kind, error.retryable = ErrorKind.QUOTA, False
            why = (
                "the daily quota is used up"
                if daily
                else "the model's capacity is exhausted"
                if capacity
                else f"the server asks to wait {error.retry_after:.0f} s"
            )
            error.message = (
                f"{error.message.rstrip('. ')}. Not retried: {why}; try later or another model"
            )
    return error
