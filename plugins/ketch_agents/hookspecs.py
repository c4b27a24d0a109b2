"""The hook the agents plugin declares (``ketch_add_hookspecs``): folders of agent
definitions from elsewhere than the workspace and the user's config."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch import hookspec

if TYPE_CHECKING:  # pragma: no cover
    from ketch.kernel import Kernel
    from ketch_prompt_kit.markdown_files import Folder


@hookspec
def agents_folders(kernel: Kernel) -> list[Folder] | None:
    """More folders of agent definitions: an installed Claude Code plugin's ``agents/``.

    Called when the ``agent`` tool is registered (once per kernel). Return
    ``ketch_prompt_kit.markdown_files.Folder`` objects, read after the workspace's and
    the user's: each with its ``namespace`` (its agents are ``namespace:NAME``),
    ``plugin_root`` and ``trust`` (the scope a definition is pinned in: it is offered
    only while pinned there), ``users_own=False``. None or [] when there are none. All
    results are collected.
    """
