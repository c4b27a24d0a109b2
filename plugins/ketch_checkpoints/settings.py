"""The ``[checkpoints]`` table."""

from __future__ import annotations

from pydantic import ByteSize, Field

from ketch.api import Section, SettingsSection


class CheckpointSettings(Section):
    """Checkpoints of the workspace before every step that can change it (undo, rewind)."""

    enabled: bool = True
    # How many steps (one mutating tool call each) of a session stay undoable; older
    # turns are dropped whole, the latest turn never.
    keep: int = Field(100, ge=1)
    # Larger files are recorded by size and time only: a change to them is seen and
    # reported, but cannot be undone. "2MiB", "500 kB" or a number of bytes.
    max_file_size: ByteSize = Field(ByteSize(2 * 1024 * 1024), ge=0)
    # A workspace with more files than this (after .gitignore) is not checkpointed:
    # ketch says so once instead of walking a home directory before every call.
    max_files: int = Field(50_000, ge=1)


# A repository must not switch off the person's safety net or make it store more: only
# the user's own config (or a trusted workspace) sets these.
CHECKPOINTS = SettingsSection(
    "checkpoints",
    CheckpointSettings,
    workspace_safe=False,
    doc="undo and rewind: workspace checkpoints",
)
