"""ketch_commands: your own slash commands from Markdown files.

``.ketch/commands/`` and ``.claude/commands/`` in the workspace, the user config dir's
``commands/`` and ``~/.claude/commands/``: ``review.md`` is ``/review``,
``git/commit.md`` is ``/git:commit`` (and ``/commit`` when no other command has that
name). Front matter ``description``, ``argument-hint``, ``model`` and
``allowed-tools`` (it only narrows that turn's tools); ``$ARGUMENTS``, ``$0``...;
``@file`` references are attached like any prompt's; ``!`cmd``` runs before sending
from the user's own folders, and from a project's only once the person trusted that
line (``ketch trust`` lists each). A skill of the same name wins. More folders come
through the ``commands_folders`` hook this plugin declares (an installed Claude Code
plugin's commands, ``/plugin-name:command``). See docs/commands.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import Command, hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Event, PermissionSnapshot, ProposedCall, Session, Vote


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_commands import hookspecs

    pluginmanager.add_hookspecs(hookspecs)  # commands_taken_names, commands_folders


@hookimpl
def ketch_register_commands(register: Callable[[Command], None], kernel: Any) -> None:
    from ketch_commands.discover import discover

    if kernel is None:
        return
    for command in discover(kernel):
        register(command)


@hookimpl(optionalhook=True)
def trust_items(kernel: Any) -> list[Any]:
    from ketch_commands.trust import items

    return items(kernel)


@hookimpl(optionalhook=True)
def claude_plugins_folder_items(kernel: Any, kind: str, folder: Any) -> list[Any] | None:
    """The ``!`cmd``` lines of an installed Claude Code plugin's commands, to be shown
    and pinned when it is installed."""
    if kind != "commands":
        return None
    from ketch_commands.trust import folder_items

    return folder_items(kernel, folder)


@hookimpl
def ketch_policy_vote(
    call: ProposedCall, snapshot: PermissionSnapshot, session: Session
) -> Vote | None:
    """A command's scoped allowed-tools (``Bash(git status:*)``) refuses other uses of
    that tool in its turn: a deny vote, which can never allow anything."""
    if "commands" not in session.state:
        return None
    from ketch_prompt_kit.allowed_tools import narrowing_vote

    return narrowing_vote(call, session, "commands")


@hookimpl
def ketch_event(session: Session, event: Event) -> None:
    if event.type == "turn_end" and "commands" in session.state:
        from ketch_prompt_kit.allowed_tools import end_of_turn

        end_of_turn(session, "commands")
