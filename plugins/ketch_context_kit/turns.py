"""Turns: a prompt the person typed (not a synthetic note) and everything up to the next one,
so an assistant's tool calls and their results never split."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Span:
    """One turn of the active context: ``messages[start:end]``.

    Messages before the first prompt (an earlier compaction's summary) form a head span
    whose ``number`` is None; otherwise ``number`` is the prompt's 1-based position
    among the transcript's prompts, stable across compactions.
    """

    start: int
    end: int
    number: int | None
    ids: tuple[str, ...]

    def __len__(self) -> int:
        return self.end - self.start


def is_prompt(message: Any) -> bool:
    return bool(message.role == "user" and not message.synthetic)


def prompt_numbers(transcript: Iterable[Any]) -> dict[str, int]:
    """The id of each prompt in the transcript -> its 1-based turn number."""
    numbers: dict[str, int] = {}
    for message in transcript:
        if is_prompt(message):
            numbers[message.id] = len(numbers) + 1
    return numbers


def split_turns(messages: Sequence[Any], numbers: dict[str, int] | None = None) -> list[Span]:
    spans: list[Span] = []
    start = 0
    for index, message in enumerate(messages):
        if is_prompt(message) and index > start:
            spans.append(_span(messages, start, index, numbers))
            start = index
    if start < len(messages):
        spans.append(_span(messages, start, len(messages), numbers))
    return spans


def _span(messages: Sequence[Any], start: int, end: int, numbers: dict[str, int] | None) -> Span:
    first = messages[start]
    number = None
    if is_prompt(first):
        number = (numbers or {}).get(first.id)
        if number is None and numbers is None:
            number = -1  # a prompt, number unknown without the transcript
    return Span(start, end, number, tuple(m.id for m in messages[start:end]))
