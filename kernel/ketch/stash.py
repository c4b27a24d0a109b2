"""A typed stash for plugin state, in the manner of pytest's ``Stash``.

A plugin that needs to keep something on the kernel or on a session (an MCP runtime,
a probe result) makes a module-level ``StashKey[T]`` and stores the value under it::

    RUNTIME = StashKey[McpRuntime]()
    kernel.stash[RUNTIME] = runtime
    runtime = kernel.stash.get(RUNTIME, None)

Keys are objects, not strings, so two plugins cannot collide and a type checker knows
what comes back. The stash lives as long as its owner and is never persisted; state
that must survive a restart belongs in ``session.state`` (JSON, stored encrypted).
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, cast, overload

T = TypeVar("T")
D = TypeVar("D")


class StashKey(Generic[T]):
    """A key into a :class:`Stash`; its type parameter is the type of the value."""

    __slots__ = ()


class Stash:
    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[StashKey[Any], object] = {}

    def __setitem__(self, key: StashKey[T], value: T) -> None:
        self._values[key] = value

    def __getitem__(self, key: StashKey[T]) -> T:
        return cast(T, self._values[key])

    @overload
    def get(self, key: StashKey[T]) -> T | None: ...
    @overload
    def get(self, key: StashKey[T], default: D) -> T | D: ...
    def get(self, key: StashKey[T], default: object = None) -> object:
        return self._values.get(key, default)

    def setdefault(self, key: StashKey[T], default: T) -> T:
        return cast(T, self._values.setdefault(key, default))

    def pop(self, key: StashKey[T], default: T | None = None) -> T | None:
        return cast("T | None", self._values.pop(key, default))

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __delitem__(self, key: StashKey[Any]) -> None:
        del self._values[key]

    def __len__(self) -> int:
        return len(self._values)
