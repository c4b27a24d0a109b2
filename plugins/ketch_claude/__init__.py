"""Claude Code compatibility commands: ``ketch import claude`` brings a project's and
your own Claude Code settings (permissions, hooks, MCP servers) into ketch's config,
showing everything first and writing only what you confirm. See docs/claude-code.md.

(Reading Claude Code's files as they are — commands, skills, agents, hooks, the Agent
SDK's protocol — lives with each feature; the shared vocabulary in ketch_claude_kit.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ketch.api import Command, hookimpl


def _configure(parser: Any) -> None:
    from ketch_claude.importing import configure

    configure(parser)


def _run(kernel: Any, args: Any) -> int:
    from ketch_claude.importing import run

    return run(kernel, args)


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    register(
        Command(
            name="import",
            help="bring Claude Code's settings over: ketch import claude [--project|--user] [--dry-run|--yes]",
            cli=True,
            configure=_configure,
            run=_run,
        )
    )
