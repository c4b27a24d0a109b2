"""A project command's ``!`cmd``` lines as trust items: each line of each Markdown
command in the workspace's ``.ketch/commands`` and ``.claude/commands`` is one (the
file, the command line, and the workspace files it runs). A line runs only while its
item is pinned; lines of the person's own folders always run. An installed Claude Code
plugin's lines are items of the plugin's own (its folder's ``trust`` scope), shown and
pinned when it is installed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch_prompt_kit.markdown_files import Folder, folders, read

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel
    from ketch_prompt_kit.markdown_files import MarkdownFile
    from ketch_trust_kit import TrustItem

MAX_FILES = 500


def line_item(kernel: Kernel, markdown: MarkdownFile, command: str, number: int) -> TrustItem:
    from ketch_trust_kit import make_item, relative_source

    root = markdown.folder.root(kernel.workspace)
    return make_item(
        "!`cmd`",
        f"#{number}",
        relative_source(markdown.path, root),
        {"command": command},
        command,
        workspace=root,
        command=command,
    )


def folder_items(kernel: Kernel, folder: Folder) -> list[TrustItem]:
    """The ``!`cmd``` lines of one folder's command files."""
    from ketch_commands.expand import BANG

    found = []
    for path in folder.paths("*.md")[:MAX_FILES]:
        markdown = read(path, folder)
        if markdown is None:
            continue
        for number, match in enumerate(BANG.finditer(markdown.body), 1):
            found.append(line_item(kernel, markdown, match.group(1), number))
    return found


def items(kernel: Kernel) -> list[TrustItem]:
    found = []
    for folder in folders(kernel.workspace, "commands"):
        if not folder.users_own:
            found.extend(folder_items(kernel, folder))
    return found
