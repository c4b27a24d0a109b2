"""What lifecycle hooks may answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class HookVerdict:
    """A hook's answer about a prompt, a tool call or the end of a turn.

    ``block=True`` stops what the hook was asked about, with ``reason`` (for a tool
    call the same as ``decision="deny"``). ``context`` is extra text for the model
    (e.g. from a UserPromptSubmit hook). For ``ketch_before_tool_use``, ``decision``
    is the hook's permission opinion and ``updated_input`` a replacement input.
    ``stop=True`` ends the turn (``stop_reason`` says why); ``system_message`` is shown
    to the person, not the model.
    """

    block: bool = False
    reason: str = ""
    context: str | None = None
    plugin: str = ""
    decision: Literal["allow", "deny", "ask"] | None = None
    updated_input: dict[str, Any] | None = None
    stop: bool = False
    stop_reason: str = ""
    system_message: str | None = None

    @property
    def denies(self) -> bool:
        return self.block or self.decision == "deny"
