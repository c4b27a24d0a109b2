"""The hook the commands plugin declares (``ketch_add_hookspecs``): folders of Markdown
commands from elsewhere than the workspace and the user's config."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch import hookspec

if TYPE_CHECKING:  # pragma: no cover
    from ketch.kernel import Kernel
    from ketch_prompt_kit.markdown_files import Folder


@hookspec
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
