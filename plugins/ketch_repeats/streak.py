"""The streak of identical calls in a turn."""

from __future__ import annotations

from ketch.api import Stash, StashKey, Tool, ToolCallPart

# The turn's calls so far, as "name NUL canonical input", in order.
RECENT = StashKey[list[str]]()


def refusal(call: ToolCallPart, tool: Tool, turn: Stash, limit: int) -> str | None:
    """The note refusing ``call`` when it is the ``limit``-th identical call in a row of
    the turn (``turn``: the turn's stash), else None; every call counts towards the streak."""
    key = f"{call.name}\x00{call.canonical_input()}"
    recent = turn.setdefault(RECENT, [])
    streak = 0
    for previous in reversed(recent):
        if previous != key:
            break
        streak += 1
    recent.append(key)
    if streak + 1 >= limit and not tool.repeatable:
        return (
            f"[ketch] You have made this exact call {streak + 1} times in a row; it was not run again. Its result "
            "will not change: use the earlier result, or try something different."
        )
    return None
