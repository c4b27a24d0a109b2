"""Strictly alternating user/model turns, as Anthropic and Gemini want them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


def alternating(
    turns: Iterable[tuple[str, list[dict[str, Any]]]],
    *,
    field: str,
    is_result: Callable[[dict[str, Any]], bool],
    opener: dict[str, Any],
    user: str = "user",
) -> list[dict[str, Any]]:
    """``(role, blocks)`` turns as ``{"role": role, field: blocks}`` messages: empty turns
    dropped, consecutive same-role turns merged (a tool-result turn followed by a note
    becomes one user turn, result blocks first, in order), and ``opener`` put first when
    the conversation would not start with the user."""
    out: list[dict[str, Any]] = []
    for role, blocks in turns:
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1][field] += blocks
        else:
            out.append({"role": role, field: list(blocks)})
    for item in out:
        if item["role"] == user:
            item[field].sort(key=lambda block: not is_result(block))  # stable: call order kept
    if out and out[0]["role"] != user:
        out.insert(0, {"role": user, field: [opener]})
    return out
