"""Untrusted text from MCP servers made safe to show: invisible characters out, length capped.

A server's tool descriptions and schemas reach the model's context verbatim, and
its results do on every call, so hidden instructions (zero-width, bidi, tag
characters) are stripped and sizes are bounded. Cuts keep the head and the tail.
"""

from __future__ import annotations

from typing import Any

DESCRIPTION_CAP = 2_000  # characters of a tool description the model sees
SCHEMA_STRING_CAP = 1_000  # characters of any one string inside an input schema


def strip_invisible(text: str) -> str:
    from ketch_text_kit.unicode import strip_invisible as strip

    return strip(text)[0]


def cap(text: str, limit: int, what: str = "text") -> str:
    """At most ``limit`` characters: the head and the tail, with a note of the cut."""
    if len(text) <= limit:
        return text
    keep_head = limit * 2 // 3
    keep_tail = limit - keep_head
    cut = len(text) - keep_head - keep_tail
    return f"{text[:keep_head]}\n[... {cut:,} characters of the {what} cut here ...]\n{text[-keep_tail:]}"


def clean_description(text: str | None) -> str:
    return cap(strip_invisible(text or "").strip(), DESCRIPTION_CAP, "description")


def clean_schema(value: Any) -> Any:
    """The schema with every string cleaned the same way (property descriptions too)."""
    if isinstance(value, str):
        return cap(strip_invisible(value), SCHEMA_STRING_CAP, "schema text")
    if isinstance(value, list):
        return [clean_schema(v) for v in value]
    if isinstance(value, dict):
        return {
            clean_schema(k) if isinstance(k, str) else k: clean_schema(v) for k, v in value.items()
        }
    return value
