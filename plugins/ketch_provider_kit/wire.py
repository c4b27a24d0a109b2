"""Converting a history to a provider's wire format once per message, not once per request.

Every request sends the whole history, so a provider that converts every message on
every request pays for the session's length on every step (the loop benchmark showed
it growing to most of ketch's own time per step). Messages are immutable: a
conversion of one message never changes, and :class:`PerMessage` keeps it for as long
as the message lives. Callers must treat what comes back as read-only (copy a dict
before changing it, as prompt-cache markers do).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from ketch.api import Message

T = TypeVar("T")


class PerMessage(Generic[T]):
    """``convert(message, *key)``, remembered per (message object, key)."""

    def __init__(self, convert: Callable[..., T]) -> None:
        self.convert = convert
        self._cache: dict[tuple[int, tuple[Hashable, ...]], tuple[weakref.ref[Message], T]] = {}
        # The last history flattened (per key): a history only grows at its end, so the
        # next request's list is the last one plus the new messages' items.
        self._last: dict[tuple[Hashable, ...], tuple[tuple[Message, ...], list[Any]]] = {}

    def flat(self, history: tuple[Message, ...], *key: Hashable) -> list[Any]:
        """Every message's conversion (each a list of wire items), concatenated. When
        ``history`` starts with the last one flattened for ``key`` (a tuple comparison
        in C that stops at the first message that is not the same object), only the new
        messages are added to a copy of the last list."""
        last = self._last.get(key)
        n = len(last[0]) if last is not None else 0
        if last is not None and len(history) >= n and history[:n] == last[0]:
            out = list(last[1])
        else:
            n, out = 0, []
        for message in history[n:]:
            out += self(message, *key)  # type: ignore[arg-type]
        self._last[key] = (history, out)
        return list(out)

    def __call__(self, message: Message, *key: Hashable) -> T:
        slot = (id(message), key)
        hit = self._cache.get(slot)
        if hit is not None and hit[0]() is message:
            return hit[1]
        value = self.convert(message, *key)
        try:
            ref = weakref.ref(message, lambda _, slot=slot: self._cache.pop(slot, None))  # type: ignore[misc]
        except TypeError:
            return value
        self._cache[slot] = (ref, value)
        return value

    def __len__(self) -> int:
        return len(self._cache)


def per_message(convert: Callable[..., T]) -> PerMessage[T]:
    """Decorator form of :class:`PerMessage`."""
    return PerMessage(convert)


__all__ = ["PerMessage", "per_message", "Any"]
