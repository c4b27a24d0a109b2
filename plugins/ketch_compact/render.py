"""Rendering turns as bounded text: for the deterministic summary and the model's input.

Each turn renders at one of several levels of detail; a budget is met by lowering the
level of the oldest turns first (all turns to "brief" before any to "line"), and
finally by omitting the oldest. Every level is bounded, so a turn's cost does not grow
with what it contained.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ketch.api import Message, TextPart, ToolCallPart

RICH, FULL, BRIEF, LINE, OMIT = -1, 0, 1, 2, 3
# Per level: (user chars, answer chars, calls listed, argument chars, result chars).
LIMITS = {
    RICH: (2_000, 2_000, 24, 300, 600),
    FULL: (400, 400, 8, 80, 0),
    BRIEF: (160, 160, 0, 0, 0),
    LINE: (80, 0, 0, 0, 0),
}
SALIENT_ARGS = ("path", "file_path", "command", "cmd", "pattern", "query", "url", "glob", "name")


def clip(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters (whitespace collapsed)."""
    if limit <= 0:
        return ""
    flat = " ".join(text[: limit * 3].split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


@dataclass
class TurnView:
    """What a turn said and did, pulled out of its messages once."""

    number: int | None
    prompt: str
    answer: str
    calls: list[
        tuple[str, str, dict[str, Any], bool | None, str]
    ]  # name, salient arg, input, ok, output
    notes: list[str]  # earlier summaries without a record

    @classmethod
    def of(cls, number: int | None, messages: Sequence[Message]) -> TurnView:
        prompt = ""
        answer = ""
        notes: list[str] = []
        results = {r.tool_call_id: r for m in messages if m.role == "tool" for r in m.tool_results}
        calls: list[tuple[str, str, dict[str, Any], bool | None, str]] = []
        for message in messages:
            if message.role == "user":
                if not message.synthetic and not prompt:
                    prompt = message.text
                elif message.synthetic and message.text.startswith(SUMMARY_MARK):
                    notes.append(message.text)
            elif message.role == "assistant":
                text = "".join(p.text for p in message.parts if isinstance(p, TextPart))
                if text.strip():
                    answer = text
                for part in message.parts:
                    if isinstance(part, ToolCallPart):
                        result = results.get(part.id)
                        calls.append(
                            (
                                part.name,
                                salient(part),
                                part.input,
                                None if result is None else result.ok,
                                "" if result is None else result.output,
                            )
                        )
        return cls(number, prompt, answer, calls, notes)

    def render(self, level: int) -> str:
        if level >= OMIT:
            return ""
        user_max, answer_max, calls_max, arg_max, result_max = LIMITS[level]
        label = f"Turn {self.number}" if self.number and self.number > 0 else "Earlier"
        lines = [f"{label} — user: {clip(self.prompt, user_max)}" if self.prompt else f"{label}:"]
        for note in self.notes:
            lines.append(
                "  earlier summary: " + clip(note.split("\n", 1)[-1], max(user_max * 3, 200))
            )
        if self.calls:
            if calls_max:
                shown = []
                for name, arg, raw, ok, output in self.calls[:calls_max]:
                    mark = {True: "✓", False: "✗", None: "?"}[ok]
                    detail = (
                        clip(json.dumps(raw, ensure_ascii=False, default=str), arg_max)
                        if level == RICH
                        else clip(arg, arg_max)
                    )
                    item = f"{name} {detail} {mark}".replace("  ", " ")
                    if level == RICH and output:
                        item += "\n      → " + clip(output, result_max)
                    elif ok is False and output:
                        item += f" ({clip(output, 80)})"
                    shown.append(item)
                extra = len(self.calls) - calls_max
                joiner = "\n    " if level == RICH else " · "
                lines.append(
                    "  tools: " + joiner.join(shown) + (f" · and {extra} more" if extra > 0 else "")
                )
            else:
                lines.append("  tools: " + counts(self.calls))
        if answer_max and self.answer:
            lines.append(f"  answer: {clip(self.answer, answer_max)}")
        return "\n".join(lines)


def salient(call: ToolCallPart) -> str:
    for key in SALIENT_ARGS:
        value = call.input.get(key)
        if isinstance(value, str) and value:
            return value
    for value in call.input.values():
        if isinstance(value, str) and value:
            return value
    return json.dumps(call.input, default=str)[:80] if call.input else ""


def counts(calls: list[tuple[str, str, dict[str, Any], bool | None, str]]) -> str:
    tally: dict[str, int] = {}
    failed = 0
    for name, _, _, ok, _ in calls:
        tally[name] = tally.get(name, 0) + 1
        failed += ok is False
    text = ", ".join(f"{name} ×{n}" if n > 1 else name for name, n in tally.items())
    return text + (f" ({failed} failed)" if failed else "")


def fit(
    views: Sequence[TurnView], budget: int, cost: Callable[[str], int], start: int = FULL
) -> tuple[list[str], int]:
    """Render turns within ``budget`` tokens. Returns the rendered turns (oldest first,
    an omission note first when some were left out) and how many were omitted."""
    levels = [start] * len(views)
    costs = {}

    def price(i: int, level: int) -> int:
        key = (i, level)
        if key not in costs:
            costs[key] = cost(views[i].render(level)) if level < OMIT else 0
        return costs[key]

    total = sum(price(i, start) for i in range(len(views)))
    for level in range(start + 1, OMIT + 1):
        if total <= budget:
            break
        for i in range(len(views)):
            if total <= budget:
                break
            total += price(i, level) - price(i, levels[i])
            levels[i] = level
    omitted = [v for v, lv in zip(views, levels, strict=True) if lv >= OMIT]
    rendered = [v.render(lv) for v, lv in zip(views, levels, strict=True) if lv < OMIT]
    if omitted:
        numbers = [v.number for v in omitted if v.number and v.number > 0]
        which = (
            f"turns {numbers[0]}-{numbers[-1]}"
            if len(numbers) > 1
            else (f"turn {numbers[0]}" if numbers else "earlier turns")
        )
        rendered.insert(
            0,
            f"({len(omitted)} oldest turns omitted for space: {which}; the saved transcript has them.)",
        )
    return rendered, len(omitted)


SUMMARY_MARK = "[ketch] Summary of the earlier conversation"
