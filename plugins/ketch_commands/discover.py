"""Finding the command files and turning each into a slash command."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.api import Command, SlashContext
from ketch_prompt_kit.markdown_files import (
    Folder,
    MarkdownFile,
    first_line,
    folders,
    hooked_folders,
    read,
    unreadable,
)

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel

MAX_COMMANDS = 500


def taken_names(kernel: Kernel) -> set[str]:
    """Names other plugins take (a skill beats a command): ``commands_taken_names``."""
    return {
        str(name).lower()
        for names in kernel.hooks.values("commands_taken_names", kernel=kernel)
        for name in names
    }


def all_folders(kernel: Kernel) -> list[Folder]:
    """The workspace's and the user's folders, then those other plugins add
    (``commands_folders``: an installed Claude Code plugin's)."""
    return [*folders(kernel.workspace, "commands"), *hooked_folders(kernel, "commands_folders")]


def discover(kernel: Kernel) -> list[Command]:
    """Every command file as a command; a file that cannot be one is reported in one
    line naming it (``kernel.notices``), never dropped silently."""
    taken = taken_names(kernel)
    found: dict[str, MarkdownFile] = {}
    report = kernel.notices.append
    for folder in all_folders(kernel):
        paths = folder.paths("*.md")
        if not paths:
            continue
        if len(paths) > MAX_COMMANDS:
            report(
                f"{folder.path}: {len(paths)} command files; only the first {MAX_COMMANDS} are read"
            )
        for path in paths[:MAX_COMMANDS]:
            name = _name(path, folder)
            if name is None:
                report(
                    f"{path}: a command name cannot hold blanks or start with a dot; not a command"
                )
                continue
            if name in taken:
                report(
                    f"{path}: the skill /{name} has the same name and wins; this command is not used"
                )
                continue
            if name in found:
                report(f"{path}: /{name} is already {found[name].path}; this one is not used")
                continue
            markdown = read(path, folder)
            if markdown is None:
                report(unreadable(path))
                continue
            if markdown.problem:
                report(markdown.report())
            found[name] = markdown
    short_counts: dict[str, int] = {}
    for name in found:
        short_counts[name.rsplit(":", 1)[-1]] = short_counts.get(name.rsplit(":", 1)[-1], 0) + 1
    commands = []
    for name, markdown in found.items():
        short = name.rsplit(":", 1)[-1]
        aliases = (
            (short,) if ":" in name and short_counts[short] == 1 and short not in found else ()
        )
        commands.append(_command(name, markdown, aliases))
    return commands


def _name(path: Path, folder: Folder) -> str | None:
    relative = path.relative_to(folder.path).with_suffix("")
    parts = [p.lower() for p in relative.parts]
    if any(not p or p.startswith(".") or " " in p for p in parts):
        return None
    return folder.named(":".join(parts))


def _command(name: str, markdown: MarkdownFile, aliases: tuple[str, ...]) -> Command:
    description = (
        markdown.text("description")
        or first_line(markdown.body)
        or f"{markdown.folder.label} command"
    )

    def run(ctx: SlashContext) -> Any:
        from ketch_commands.expand import run_command

        return run_command(ctx, name, markdown)

    return Command(
        name=name,
        help=description,
        slash=True,
        slash_run=run,
        aliases=aliases,
        extra={
            "source": f"{markdown.folder.label}: {markdown.path.name}",
            "path": markdown.path,
            "argument_hint": markdown.text("argument-hint"),
            "prompt": True,
        },
    )
