"""The ``[context]`` settings table (user config; a workspace may not set it untrusted)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class ContextSettings(BaseModel):
    model_config = ConfigDict(extra="ignore")

    # Instruction files, read from the workspace root and the user config dir, in this order.
    instruction_files: list[str] = Field(
        default_factory=lambda: ["AGENTS.md", "KETCH.md", "CLAUDE.md"]
    )
    instruction_max_bytes: int = Field(32_768, ge=256)  # per file (Codex uses 32 KiB)
    pointer_max_bytes: int = Field(16_384, ge=256)  # per file a pointer brings in
    instructions_max_total_bytes: int = Field(65_536, ge=1_024)  # everything above together
    follow_pointers: bool = True
    max_pointers_per_file: int = Field(8, ge=0)
    environment: bool = True
    git_timeout: float = Field(2.0, gt=0)
    overview: bool = True
    overview_max_bytes: int = Field(4_096, ge=256)
    memory_file: str = ".ketch/memory.md"  # relative to the workspace
    memory_max_bytes: int = Field(8_192, ge=256)
    tools: bool = True  # the tool list for the mode


def load(settings: Any) -> tuple[ContextSettings, str | None]:
    """The settings, or the defaults and a one-line reason when the table is invalid."""
    try:
        return ContextSettings.model_validate(settings.section("context")), None
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(k) for k in first.get("loc", ()))
        return (
            ContextSettings(),
            f"[context] {key}: {first.get('msg', 'invalid')}; using the defaults",
        )
