"""Modes (plan / build) and the permission profile, as ACP modes and config options.

Both the legacy ``modes`` and a ``mode`` config option are sent, kept in step, as the
protocol asks during its transition; the profile is a second config option.
"""

from __future__ import annotations

from acp.schema import (
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
)

MODES = {
    "build": ("Build", "every tool; what runs without asking follows the profile"),
    "plan": ("Plan", "read-only tools only: the model looks and proposes, nothing changes"),
}
PROFILES = {
    "manual": ("Manual", "reads inside the workspace run; everything else asks"),
    "assisted": (
        "Assisted",
        "workspace edits and read-only or sandboxed commands run without asking",
    ),
    "full-access": ("Full access", "everything runs without asking, except the hard guards"),
}


def mode_state(mode: str) -> SessionModeState:
    return SessionModeState(
        current_mode_id=mode,
        available_modes=[
            SessionMode(id=key, name=name, description=text) for key, (name, text) in MODES.items()
        ],
    )


def _select(
    option_id: str, name: str, current: str, choices: dict[str, tuple[str, str]], **extra: str
) -> SessionConfigOptionSelect:
    return SessionConfigOptionSelect(
        type="select",
        id=option_id,
        name=name,
        current_value=current,
        options=[
            SessionConfigSelectOption(value=key, name=label, description=text)
            for key, (label, text) in choices.items()
        ],
        **extra,  # type: ignore[arg-type]
    )


def config_options(mode: str, profile: str) -> list[SessionConfigOptionSelect]:
    return [
        _select("mode", "Mode", mode, MODES, category="mode"),
        _select(
            "profile",
            "Permissions",
            profile,
            PROFILES,
            description="what runs without asking (a loaded session starts at Manual again)",
        ),
    ]
