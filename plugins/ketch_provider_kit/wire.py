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

from ketch.messages import Message

T = TypeVar("T")


class PerMessage(Generic[T]):
    """``convert(message, *key)``, remembered per (message object, key)."""

    def __init__(self, convert: Callable[..., T]) -> None:
        self.convert = convert
        self._cache: dict[tuple[int, tuple[Hashable, ...]], tuple[weakref.ref[Message], T]] = {}

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
