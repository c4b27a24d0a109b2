"""Claude Code's permission modes and ketch's modes and profiles.

Claude Code has one knob (``--permission-mode``, ``set_permission_mode``, a settings
file's ``defaultMode``); ketch has two: the mode (``plan`` offers read-only tools) and
the profile (what runs without asking). Every Claude Code mode maps to a pair, and
none of them reaches past the hard guards, the deny rules or the sandbox:

============================  ==============  ===============================================
Claude Code                   ketch            note
============================  ==============  ===============================================
``default`` (``manual``)      build, manual
``acceptEdits``               build, assisted  edits in the workspace run without asking
``plan``                      plan, (kept)     read-only tools only
``bypassPermissions``         build, full-     the hard guards still ask, and a program
                              access           cannot answer them: they are denied
``dontAsk``                   build, manual    and every ask is denied without asking
``auto``                      build, manual    ketch has no classifier: it asks as manual
============================  ==============  ===============================================
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModeMapping:
    mode: str  # ketch's mode
    profile: str | None  # ketch's profile (None: keep the current one)
    never_ask: bool = False  # dontAsk: an ask is a deny, nobody is asked
    note: str = ""


CLAUDE_MODES: dict[str, ModeMapping] = {
    "default": ModeMapping("build", "manual"),
    "manual": ModeMapping("build", "manual"),
    "acceptEdits": ModeMapping("build", "assisted"),
    "plan": ModeMapping("plan", None),
    "bypassPermissions": ModeMapping(
        "build",
        "full-access",
        note="the hard guards and deny rules still apply, and the sandbox stays",
    ),
    "dontAsk": ModeMapping("build", "manual", never_ask=True),
    "auto": ModeMapping("build", "manual", note="ketch has no classifier: it asks as manual does"),
}
PROFILE_MODES = {"manual": "default", "assisted": "acceptEdits", "full-access": "bypassPermissions"}


def claude_mode(
    mode: str, profile: str, *, read_only: bool = False, never_ask: bool = False
) -> str:
    """Claude Code's name for ketch's authority (plan mode, else by profile)."""
    if read_only or mode == "plan":
        return "plan"
    if never_ask and profile == "manual":
        return "dontAsk"
    return PROFILE_MODES.get(profile, "default")


def mapping(name: str) -> ModeMapping:
    """The mapping of a Claude Code permission mode; ValueError names the known ones."""
    found = CLAUDE_MODES.get(name)
    if found is None:
        known = ", ".join(CLAUDE_MODES)
        raise ValueError(f"unknown permission mode {name!r} (known: {known})")
    return found
