"""``/init [FILE]``: the model drafts the repository's instruction file (AGENTS.md, or
another of ``[context] instruction_files``, e.g. KETCH.md).

It is an ordinary turn with a prompt and narrowed tools: the read-only ones to look
around, and ``write_file``/``edit_file`` for the file itself. The write goes through the
policy like any write (in the manual profile: the diff is shown and asked about).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch.api import PromptRequest

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import SlashContext

WRITERS = frozenset({"write_file", "edit_file"})

PROMPT = """Write {name} for this repository: the instructions a coding agent reads before it works here (ketch, Codex and other agents read AGENTS.md; ketch also reads KETCH.md and CLAUDE.md).

First look at the repository with the read-only tools: the README, the build, test and CI configuration (pyproject.toml, package.json, Makefile, tox.ini, .github/workflows, ...), the layout of the source and test directories, and a few representative files. Then {action}, in Markdown, about 60 lines at most:

- what the project is, in one or two sentences;
- how to set it up, build it, run the tests (one test, and all of them), lint and format it: the exact commands you found, never guesses;
- the layout: where the code, the tests and the docs live;
- the conventions a newcomer would get wrong (style, naming, commit messages, what never to do), only those the repository shows.

Do not invent commands or rules you did not see in the repository. The person reviews the change before it is written."""


def slash_init(ctx: SlashContext) -> None:
    from ketch_context.config import load

    settings, _ = load(ctx.kernel.settings)
    names = list(settings.instruction_files) or ["AGENTS.md"]
    name = ctx.argument.strip() or names[0]
    if name not in names:
        ctx.print(f"/init writes one of the instruction files ketch reads: {', '.join(names)}")
        return
    if ctx.submit is None:
        ctx.print("/init needs a frontend that can send a prompt")
        return
    tools = ctx.kernel.tools
    missing = sorted(WRITERS - set(tools))
    if "write_file" in missing:
        ctx.print("/init needs the write_file tool (is the fs plugin disabled?)")
        return
    path = ctx.session.workspace / name
    if path.exists():
        action = (
            f"update {name} (it exists: read it first, keep what is still right, and change it "
            "with edit_file, or write_file for a rewrite)"
        )
    else:
        action = f"create {name} with write_file"
    allowed = frozenset(t.name for t in tools.values() if not t.mutating) | (WRITERS & set(tools))
    ctx.submit(
        PromptRequest(
            text=PROMPT.format(name=name, action=action), allowed_tools=allowed, source="/init"
        )
    )
