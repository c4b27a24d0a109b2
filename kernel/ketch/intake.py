"""What a plugin gets while a submitted prompt is taken in (``ketch_expand_prompt``).

A prompt may name things to attach (``@notes.txt``). Reading them is still an action
with effects, so it goes through the same path as the model's tool calls: the mode,
the policy votes and the approver, the hooks, the journal and the events. The kernel
knows nothing about what is attached or how it is written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ketch.tools import ToolResult


@dataclass(frozen=True)
class PromptIntake:
    """Run tool calls on the user's behalf while their prompt is taken in."""

    call_tool: Callable[[str, dict[str, Any]], Awaitable[ToolResult]]
    notice: Callable[[str], None]
    has_tool: Callable[[str], bool]
