"""Which hooks an event runs: Claude Code's matcher rules (command hooks and the Agent
SDK's hook callbacks alike).

``"*"``, ``""`` or no matcher: every time. Only letters, digits, ``_``, ``-``, blanks,
``,`` and ``|``: a list of exact names (``"Edit|Write"``, ``"shell, grep"``). Anything
else: a regular expression searched anywhere in the name (``"mcp__memory__.*"``;
anchor it with ``^...$`` for an exact match). A tool is known by its ketch name and
by Claude Code's names for it, so ``"Bash"`` matches ``shell`` and ``"Edit"``
matches ``edit_file``. Events without a subject (UserPromptSubmit, Stop) ignore
the matcher.
"""

from __future__ import annotations

import re

_NAMES = re.compile(r"[A-Za-z0-9_ ,|-]+")


def matches(matcher: str | None, names: tuple[str, ...] | None) -> bool:
    if names is None or matcher in (None, "", "*"):
        return True
    assert matcher is not None
    if _NAMES.fullmatch(matcher):
        wanted = {part.strip() for part in re.split(r"[|,]", matcher)} - {""}
        return any(name in wanted for name in names)
    try:
        pattern = re.compile(matcher)
    except re.error:
        return matcher in names
    return any(pattern.search(name) for name in names)
