"""``[compaction]``: when to compact and what to keep (the context budget), and the
compactors' own keys."""

from __future__ import annotations

from pydantic import Field

from ketch.api import Section, SettingsSection


class CompactorSettings(Section):
    # Compact once a request would fill this share of the effective capacity, down to
    # ``target``; the last ``keep_recent_turns`` turns always stay verbatim.
    trigger: float = Field(0.70, gt=0, le=1)
    target: float = Field(0.50, gt=0, le=1)
    keep_recent_turns: int = Field(1, ge=1)
    compactor: str = "deterministic"  # or "model": a structured summary from the session's model
    # What /compact uses: asked for by the person, so the model writes the summary by default.
    command_compactor: str = "model"
    # Old tool results larger than this (estimated tokens) are pruned first.
    prune_min_tokens: int = Field(200, ge=20)
    # A summary never takes more than this many tokens (it also fits the target).
    summary_max_tokens: int = Field(4_000, ge=200)
    # The model summarizer gives up after this many seconds (then the deterministic one runs).
    model_timeout: float = Field(120.0, gt=0)
    # Tools whose successful calls count as "files changed" (their path argument).
    changed_file_tools: list[str] = Field(
        default_factory=lambda: [
            "write_file",
            "edit_file",
            "multi_edit",
            "apply_patch",
            "create_file",
        ]
    )
    # When protected turns alone overflow, prune old tool outputs of the current turn
    # (never its latest step) instead of stopping.
    prune_current_turn: bool = True


COMPACTION = SettingsSection("compaction", CompactorSettings, workspace_safe=True)
