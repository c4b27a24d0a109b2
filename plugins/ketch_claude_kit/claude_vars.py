"""Claude Code's ``${CLAUDE_...}`` variables in the files written for it.

``${CLAUDE_PLUGIN_ROOT}`` (a plugin's own folder), ``${CLAUDE_PLUGIN_DATA}``,
``${CLAUDE_SKILL_DIR}``, ``${CLAUDE_PROJECT_DIR}`` and ``${CLAUDE_SESSION_ID}`` are
expanded where ketch knows them. Where it does not (a file that is not part of an
installed plugin names ``${CLAUDE_PLUGIN_ROOT}``), the reference is reported and never
passed on as an empty string: ``${CLAUDE_PLUGIN_ROOT}/scripts/check.sh`` must not
become ``/scripts/check.sh``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

NAMES = frozenset(
    {
        "CLAUDE_PLUGIN_ROOT",
        "CLAUDE_PLUGIN_DATA",
        "CLAUDE_SKILL_DIR",
        "CLAUDE_PROJECT_DIR",
        "CLAUDE_SESSION_ID",
    }
)
_REF = re.compile(r"\$\{(CLAUDE_[A-Z_]+)\}|\$(CLAUDE_PLUGIN_ROOT|CLAUDE_PLUGIN_DATA)\b")


def references(text: str) -> set[str]:
    """The Claude Code variables ``text`` names."""
    return {m.group(1) or m.group(2) for m in _REF.finditer(text)} & NAMES


def expand(text: str, known: Mapping[str, str | None]) -> tuple[str, list[str]]:
    """``text`` with the known variables expanded, and the names it uses that are not
    known (left as written)."""
    missing: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in NAMES:
            return match.group(0)
        value = known.get(name)
        if value is None:
            if name not in missing:
                missing.append(name)
            return match.group(0)
        return value

    return _REF.sub(replace, text), missing


def unknown_note(names: list[str], where: str) -> str:
    """One line saying what could not be expanded, and why."""
    listed = ", ".join(f"${{{n}}}" for n in names)
    why = (
        "only an installed Claude Code plugin has one"
        if "CLAUDE_PLUGIN_ROOT" in names or "CLAUDE_PLUGIN_DATA" in names
        else "ketch does not know it here"
    )
    return f"{where} uses {listed}, which is not set ({why})"
