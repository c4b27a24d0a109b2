"""The policy plugin's vocabulary: its modes and its profiles (import-light)."""

from __future__ import annotations

from ketch.api import Mode, Profile

MODES = (
    Mode("plan", "read-only tools only; investigate and propose", read_only=True),
    Mode("build", "all tools; every call is checked by the policy", default=True),
)
PROFILES = (
    Profile(
        "manual", "asks before every edit and every command that is not read-only", default=True
    ),
    Profile("assisted", "runs proven-harmless commands and workspace edits without asking"),
    Profile("full-access", "runs everything except what the hard guards and deny rules stop"),
)
