"""The hooks the commands plugin declares: slash command names other plugins take, and
folders of Markdown commands from elsewhere than the workspace and the user's config.

Implement it with ``@hookimpl(optionalhook=True)`` (so your plugin still loads when
the commands plugin is disabled)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch.api import hookspec, returns

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel
    from ketch_prompt_kit.markdown_files import Folder


@hookspec
@returns(list, tuple, set, frozenset)
def commands_taken_names(kernel: Kernel) -> list[str] | None:
    """Names of slash commands this plugin offers that beat a Markdown command file of
    the same name (a skill does), lower-case.

    Called when the command files are read (once per registry build). Return the
    names, or None. An implementation that raises is reported and skipped.
    """


@hookspec
@returns(list, tuple)
def commands_folders(kernel: Kernel) -> list[Folder] | None:
    """More folders of Markdown commands: an installed Claude Code plugin's ``commands/``.

    Called when the commands are discovered (once per kernel) and when a command's
    ``!`cmd``` lines are listed. Return ``ketch_prompt_kit.markdown_files.Folder``
    objects, read after the workspace's and the user's folders: each with its
    ``namespace`` (its files are ``/namespace:name``), ``plugin_root`` (expanded as
    ``${CLAUDE_PLUGIN_ROOT}`` in its files) and ``trust`` (the scope its ``!`cmd```
    lines are pinned in: a line runs only while pinned there), ``users_own=False``.
    None or [] when there are none. All results are collected.
    """
