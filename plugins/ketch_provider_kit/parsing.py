"""Parsing model output: tool-call arguments and reasoning leaked as <think> tags."""

from __future__ import annotations

import json
from typing import Any

from ketch.api import ProviderEvent, ReasoningDelta, TextDelta

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
                    self.pending = stripped[len(OPEN_TAG) :]
                    self.state = "reasoning"
                else:
                    self.state = "reasoning" if self.state == "implicit" else "text"
                continue
            if self.state == "reasoning":
                index = self.pending.find(CLOSE_TAG)
                if index >= 0:
                    if index:
                        out.append(("reasoning", self.pending[:index]))
                    self.pending = self.pending[index + len(CLOSE_TAG) :]
                    self.state, self.closed = "after", True
                    continue
                keep = _partial_suffix(self.pending, CLOSE_TAG)
                ready = self.pending[: len(self.pending) - keep]
                if ready:
                    out.append(("reasoning", ready))
                self.pending = self.pending[len(ready) :]
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

    def __init__(
        self, text: list[str], reasoning: list[str], *, starts_in_reasoning: bool = False
    ) -> None:
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
