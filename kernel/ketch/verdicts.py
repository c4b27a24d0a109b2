"""What lifecycle hooks may answer."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HookVerdict:
    """``block=True`` stops what the hook was asked about, with ``reason``.
    ``context`` is extra text for the model (e.g. from a UserPromptSubmit hook)."""

    block: bool = False
    reason: str = ""
    context: str | None = None
    plugin: str = ""
