"""Context building: the system prompt (identity, environment, instruction files with
their pointers, repository overview, project memory, the tools for the mode), the
``remember`` tool and the ``/context``, ``/memory`` and ``/init`` commands. See docs/context.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import Command, hookimpl, provides

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import PromptPart, Session, SlashContext
    from ketch_context_kit.compaction import CompactionResult


@hookimpl
def ketch_system_prompt(session: Session) -> list[PromptPart]:
    from ketch_context.builder import system_prompt

    return system_prompt(session)


@hookimpl
@provides("remember")
def ketch_register_tools(register: Callable[[Any], None]) -> None:
    from ketch_context.remember import Remember

    register(Remember())


def _context(ctx: SlashContext) -> None:
    from ketch_context.commands import slash_context

    slash_context(ctx)


def _memory(ctx: SlashContext) -> None:
    from ketch_context.commands import slash_memory

    slash_memory(ctx)


def _init(ctx: SlashContext) -> None:
    from ketch_context.init_command import slash_init

    slash_init(ctx)


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    register(
        Command(
            name="init",
            help="draft AGENTS.md from the repository (or /init KETCH.md); you approve the write",
            slash=True,
            slash_run=_init,
        )
    )
    register(
        Command(
            name="context",
            help="what the context holds: token breakdown; verbatim, pruned, summarized and excluded turns",
            slash=True,
            slash_run=_context,
        )
    )
    register(
        Command(
            name="memory",
            help="the project memory: /memory · /memory add TEXT · /memory forget N",
            slash=True,
            slash_run=_memory,
        )
    )


@hookimpl(optionalhook=True)  # the compact plugin's hook
def compact_after(session: Session, result: CompactionResult) -> None:
    # Instruction files are re-read from disk after every compaction.
    from ketch_context.builder import reread_instructions

    reread_instructions(session)


@hookimpl
def ketch_session_end(session: Session, reason: str) -> None:
    from ketch_context.builder import forget

    forget(session)
