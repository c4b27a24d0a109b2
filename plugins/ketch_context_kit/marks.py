"""Transcript messages a rewind abandoned: they stay in the transcript, marked.

The marks live in ``session.state`` (saved with the session) under this library's key,
so the plugin that rewinds and the ones that show a transcript (the store's ``ketch
sessions show``) agree without naming each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

STATE_KEY = "conversation"


def rewound(state: dict[str, Any]) -> set[str]:
    """The ids of every transcript message a rewind marked (a copy)."""
    found = state.get(STATE_KEY)
    marks = found.get("rewound") if isinstance(found, dict) else None
    return {str(i) for i in marks} if isinstance(marks, list) else set()


def mark_rewound(state: dict[str, Any], ids: Iterable[str]) -> None:
    table = state.get(STATE_KEY)
    if not isinstance(table, dict):
        table = state[STATE_KEY] = {}
    table["rewound"] = sorted(rewound(state) | set(ids))
