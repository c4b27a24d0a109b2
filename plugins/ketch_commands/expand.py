"""Expanding a command file into the prompt it sends."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ketch.commands import PromptRequest
from ketch_claude_kit.claude_vars import expand as expand_claude_vars
from ketch_claude_kit.claude_vars import unknown_note as unset_note
from ketch_prompt_kit.allowed_tools import narrow_rest_of_turn, narrowing, unknown_note
from ketch_prompt_kit.arguments import expand_arguments

if TYPE_CHECKING:  # pragma: no cover
    from ketch.commands import SlashContext
    from ketch_prompt_kit.markdown_files import MarkdownFile

# Claude Code's inline form: !`command`, at the start of a line or after whitespace.
BANG = re.compile(r"(?:(?<=^)|(?<=\s))!`([^`\n]+)`", re.MULTILINE)
BANG_TIMEOUT = 120.0
STATE_KEY = "commands"  # this plugin's part of the session state


def may_run_commands(ctx: SlashContext, markdown: MarkdownFile) -> bool:
    """``!`` lines run from the user's own folders, or from a workspace the user trusted."""
    return markdown.folder.users_own or bool(ctx.session.trusted_workspace)


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


async def run_bang_lines(ctx: SlashContext, name: str, markdown: MarkdownFile, text: str) -> str:
    """Replace each !`cmd` with its output, when the file may run commands; else say so."""
    found = list(BANG.finditer(text))
    if not found:
        return text
    if not may_run_commands(ctx, markdown):
        ctx.print(
            f"/{name}: its !`…` commands did not run: {markdown.folder.label} is this workspace's, "
            "and the workspace is not trusted (/trust trusts it)"
        )
        return BANG.sub(
            lambda m: f"[!`{m.group(1)}` was not run: the workspace is not trusted]", text
        )
    from ketch_claude_kit.claude_vars import references
    from ketch_prompt_kit.user_shell import run_user_command

    outputs: list[str] = []
    for match in found:
        unset = sorted(references(match.group(1)))
        if unset:  # never run with a path that would start at /
            ctx.print(f"/{name}: $ {match.group(1)} not run: it uses {', '.join(unset)}")
            outputs.append(f"[!`{match.group(1)}` was not run: {', '.join(unset)} is not set]")
            continue
        ctx.print(f"/{name}: $ {match.group(1)}")
        result = await run_user_command(match.group(1), ctx.session.workspace, timeout=BANG_TIMEOUT)
        outputs.append(
            result.output.rstrip("\n") if result.exit_code == 0 else result.transcript_text()
        )
    pieces = iter(outputs)
    return BANG.sub(lambda m: next(pieces), text)
