"""ketch_commands: your own slash commands from Markdown files.

``.ketch/commands/`` and ``.claude/commands/`` in the workspace, the user config dir's
``commands/`` and ``~/.claude/commands/``: ``review.md`` is ``/review``,
``git/commit.md`` is ``/git:commit`` (and ``/commit`` when no other command has that
name). Front matter ``description``, ``argument-hint``, ``model`` and
``allowed-tools`` (it only narrows that turn's tools); ``$ARGUMENTS``, ``$0``...;
``@file`` references are attached like any prompt's; ``!`cmd``` runs before sending
only from the user's own folders or a trusted workspace. A skill of the same name wins.
See docs/commands.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ketch import hookimpl
from ketch.commands import Command


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    from ketch_commands.discover import discover

    kernel: Any = getattr(register, "kernel", None)
    if kernel is None:
        return
    for command in discover(kernel):
        register(command)
