"""The hook the Claude Code plugins plugin declares (``ketch_add_hookspecs``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch.api import hookspec

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel
    from ketch_prompt_kit.markdown_files import Folder
    from ketch_trust_kit import TrustItem


@hookspec
def claude_plugins_folder_items(
    kernel: Kernel, kind: str, folder: Folder
) -> list[TrustItem] | None:
    """What the files of one folder of a Claude Code plugin would run or make ketch
    run, as trust items, so that installing the plugin shows them and pins them.

    Called by ``ketch plugin install``, ``update`` and ``trust``, once per folder.
    ``kind`` is ``"commands"``, ``"skills"`` or ``"agents"``; ``folder`` is the
    ``ketch_prompt_kit.markdown_files.Folder`` this plugin hands that reader (through
    ``commands_folders``, ``skills_folders``, ``agents_folders``) with its ``trust``
    scope. The plugin that reads that kind returns its items for the folder, built
    exactly as it builds them when it checks one before running it (relative to
    ``folder.trust.root``): ``!`cmd``` lines, skills with scripts, agent definitions.
    None for another kind. All results are collected.
    """


@hookspec
def claude_plugins_removed(kernel: Kernel, plugin: str, servers: list[str]) -> None:
    """A Claude Code plugin was uninstalled: forget what you kept about it.

    Called by ``ketch plugin uninstall`` (and ``marketplace remove``) after the
    plugin's own folder (files, pins, data) is gone. ``plugin`` is its id
    (``name@marketplace``); ``servers`` the names its MCP servers ran under
    (``plugin_NAME_SERVER``). A plugin that keeps state keyed by those (the MCP
    plugin's pinned tool definitions) removes it, for every workspace.
    """
