"""``/name arguments``: how a typed line names a slash command, in one place (the shell,
ACP and headless runs read it the same way).

A name starts with a letter and may hold letters, digits, ``_``, ``-``, ``.`` and ``:``
(``/git:commit`` for ``git/commit.md``, ``/plugin:name``); ``/usr/bin/env`` is not a
command (a ``/`` after the name). Names are matched without regard to case, by their
registered name or an alias.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_SLASH = re.compile(r"/([A-Za-z][\w.:-]*)(?:\s+(.*))?", re.DOTALL)


def parse(text: str) -> tuple[str, str] | None:
    """``/name rest`` -> (name, rest); None when the line is not a command."""
    match = _SLASH.fullmatch(text.strip())
    if match is None or match.group(1).endswith(":"):
        return None
    return match.group(1).lower(), (match.group(2) or "").strip()


def find(commands: Iterable[Any], text: str) -> tuple[Any, str] | None:
    """The slash command (a :class:`ketch.commands.Command`) ``text`` invokes, and its
    argument; None when it names none."""
    parsed = parse(text)
    if parsed is None:
        return None
    name, argument = parsed
    for command in commands:
        if (
            command.slash
            and command.slash_run is not None
            and (name == command.name.lower() or name in command.aliases)
        ):
            return command, argument
    return None
