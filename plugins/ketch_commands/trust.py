"""A project command's ``!`cmd``` lines as trust items: each line of each Markdown
command in the workspace's ``.ketch/commands`` and ``.claude/commands`` is one (the
file, the command line, and the workspace files it runs). A line runs only while its
item is pinned; lines of the person's own folders always run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch_prompt_kit.markdown_files import folders, read

if TYPE_CHECKING:  # pragma: no cover
    from ketch.kernel import Kernel
    from ketch_prompt_kit.markdown_files import MarkdownFile
    from ketch_trust_kit import TrustItem

MAX_FILES = 500


def line_item(kernel: Kernel, markdown: MarkdownFile, command: str, number: int) -> TrustItem:
    from ketch_trust_kit import make_item, relative_source

    source = relative_source(markdown.path, kernel.workspace)
    return make_item(
        "!`cmd`",
        f"#{number}",
        source,
        {"command": command},
        command,
        workspace=kernel.workspace,
        command=command,
    )


def items(kernel: Kernel) -> list[TrustItem]:
    from ketch_commands.expand import BANG

    found = []
    for folder in folders(kernel.workspace, "commands"):
        if folder.users_own or not folder.path.is_dir():
            continue
        for path in sorted(folder.path.rglob("*.md"))[:MAX_FILES]:
            markdown = read(path, folder)
            if markdown is None:
                continue
            for number, match in enumerate(BANG.finditer(markdown.body), 1):
                found.append(line_item(kernel, markdown, match.group(1), number))
    return found
