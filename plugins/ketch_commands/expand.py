"""Expanding a command file into the prompt it sends."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ketch.api import PromptRequest
from ketch_claude_kit.claude_vars import expand as expand_claude_vars
from ketch_claude_kit.claude_vars import unknown_note as unset_note
from ketch_prompt_kit.allowed_tools import narrow_rest_of_turn, narrowing, unknown_note
from ketch_prompt_kit.arguments import expand_arguments

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import SlashContext
    from ketch_prompt_kit.markdown_files import MarkdownFile

# Claude Code's inline form: !`command`, at the start of a line or after whitespace.
BANG = re.compile(r"(?:(?<=^)|(?<=\s))!`([^`\n]+)`", re.MULTILINE)
BANG_TIMEOUT = 120.0
STATE_KEY = "commands"  # this plugin's part of the session state


async def run_command(ctx: SlashContext, name: str, markdown: MarkdownFile) -> None:
    if ctx.submit is None:
        ctx.print(f"/{name}: this frontend cannot send a command's prompt")
        return
    text = expand_arguments(markdown.body, ctx.argument)
    text, missing = expand_claude_vars(
        text,
        {
            "CLAUDE_PROJECT_DIR": str(ctx.session.workspace),
            "CLAUDE_SESSION_ID": ctx.session.id,
            **markdown.folder.variables(),  # an installed Claude Code plugin's folder
        },
    )
    if missing:
        ctx.print(f"/{name}: {unset_note(missing, str(markdown.path))}; kept as written")
    text = await run_bang_lines(ctx, name, markdown, text)
    allowed = markdown.meta.get("allowed-tools")
    narrow, unknown = narrowing(allowed, ctx.kernel.tools, f"/{name}")
    if unknown:
        ctx.print(unknown_note(f"/{name}", unknown, ctx.kernel.tools))
    if narrow is not None and narrow.scoped:  # Bash(git status:*): enforced call by call
        narrow_rest_of_turn(ctx.session, STATE_KEY, f"/{name}", allowed)
    model = markdown.text("model") or None
    ctx.submit(
        PromptRequest(
            text=text,
            model=model,
            allowed_tools=narrow.tools if narrow else None,
            source=f"/{name}",
        )
    )


def may_run(ctx: SlashContext, markdown: MarkdownFile, command: str, number: int) -> bool:
    """A line of the person's own folders runs; a project's only while the person has
    that very line (and the files it runs) trusted; an installed plugin's while it is
    pinned in the plugin's own scope."""
    if markdown.folder.users_own:
        return True
    from ketch_commands.trust import line_item
    from ketch_trust_kit import check

    item = line_item(ctx.kernel, markdown, command, number)
    return check(ctx.kernel, item, session=ctx.session, scope=markdown.folder.trust)


async def run_bang_lines(ctx: SlashContext, name: str, markdown: MarkdownFile, text: str) -> str:
    """Replace each !`cmd` with its output when it may run; else say why it did not."""
    found = list(BANG.finditer(text))
    if not found:
        return text
    from ketch_claude_kit.claude_vars import references
    from ketch_prompt_kit.user_shell import run_user_command

    # What is trusted is the line as the file has it (``ketch trust`` lists those), the
    # person's own $ARGUMENTS aside: pair each line with the file's, when they pair up.
    written = [m.group(1) for m in BANG.finditer(markdown.body)]
    outputs: list[str] = []
    for index, match in enumerate(found, 1):
        command = match.group(1)
        template = written[index - 1] if len(written) == len(found) else command
        if not may_run(ctx, markdown, template, index):
            scope = markdown.folder.trust
            how = scope.hint if scope is not None else "ketch trust"
            outputs.append(f"[!`{command}` was not run: not trusted ({how} shows it)]")
            continue
        unset = sorted(references(command))
        if unset:  # never run with a path that would start at /
            ctx.print(f"/{name}: $ {command} not run: it uses {', '.join(unset)}")
            outputs.append(f"[!`{command}` was not run: {', '.join(unset)} is not set]")
            continue
        ctx.print(f"/{name}: $ {command}")
        result = await run_user_command(command, ctx.session.workspace, timeout=BANG_TIMEOUT)
        outputs.append(
            result.output.rstrip("\n") if result.exit_code == 0 else result.transcript_text()
        )
    pieces = iter(outputs)
    return BANG.sub(lambda m: next(pieces), text)
