"""Context budget arithmetic shared by the loop and context plugins.

Effective capacity = raw limit - max(output reserve, 8% of raw) - max(2,048, 2% of raw).
Token counts are estimates (about four characters per token) unless a provider
reported real ones; the loop calibrates with the provider's input token counts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ketch.messages import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart

DEFAULT_CONTEXT_WINDOW = 128_000
CHARS_PER_TOKEN = 4


def effective_capacity(raw_limit: int, output_reserve: int | None = None) -> int:
    reserve = max(output_reserve or 0, int(raw_limit * 0.08))
    overhead = max(2_048, int(raw_limit * 0.02))
    return max(raw_limit - reserve - overhead, 1)


def band(utilization: float) -> str:
    """The meter's colour band: green < 70%, amber < 85%, orange < 95%, red."""
    if utilization < 0.70:
        return "green"
    if utilization < 0.85:
        return "amber"
    if utilization < 0.95:
        return "orange"
    return "red"


def estimate_text(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def estimate_message(message: Message) -> int:
    total = 4  # role and framing
    for part in message.parts:
        if isinstance(part, TextPart):
            total += estimate_text(part.text)
        elif isinstance(part, ReasoningPart):
            total += estimate_text(part.text) + estimate_text(part.signature or "") + estimate_text(part.redacted or "")
        elif isinstance(part, ToolCallPart):
            total += 8 + estimate_text(part.name) + estimate_text(part.canonical_input())
        elif isinstance(part, ToolResultPart):
            total += 8 + estimate_text(part.output)
    return total


def estimate_messages(messages: Iterable[Message]) -> int:
    return sum(estimate_message(m) for m in messages)


def estimate_schemas(schemas: Iterable[Any]) -> int:
    return sum(estimate_text(json.dumps(s, default=str)) for s in schemas)
