"""Modes and profiles, as plugins declare them (import-light: the command line lists them).

The kernel knows that a session has a mode and a profile, that a ``read_only`` mode
offers no mutating tool, and that a resumed session falls back to the ``default``
profile. Their names and what they allow are the declaring plugins' vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Mode:
    """A session mode, declared by a plugin (``ketch_register_modes``).

    A ``read_only`` mode offers no mutating tool, and the loop refuses one proposed
    anyway before any vote: that is structural, not a policy opinion.
    """

    name: str
    description: str = ""
    read_only: bool = False
    default: bool = False
    plugin: str = field(default="", compare=False)


@dataclass(frozen=True)
class Profile:
    """A permission profile, declared by a policy plugin (``ketch_register_profiles``).

    The kernel keeps the session's profile in the snapshot and knows one more thing:
    the ``default`` profile is what new sessions start with and what a resumed session
    is reset to, because authority is never restored.
    """

    name: str
    description: str = ""
    default: bool = False
    plugin: str = field(default="", compare=False)
