"""Compaction: the deterministic compactor and the model summarizer, and the commands
``/compact [instructions]``, ``/pin`` and ``/unpin``.

``[compaction] compactor = "deterministic"`` (default; no model call) or ``"model"``
(asks the session's provider for a structured summary; falls back to the
deterministic one on any failure). When to compact is this plugin's too
(``[compaction] trigger``, ``target``, ``keep_recent_turns``: ``runner.py``), and it
declares the compactor hook (``compact_compactor``, ``hookspecs.py``): its own answers
last, so a third-party compactor installed alongside answers first. See docs/context.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import Command, hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session, SlashContext
    from ketch_context_kit.compaction import CompactionRequest
    from ketch_context_kit.request import RequestBudget


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_compact import hookspecs

    pluginmanager.add_hookspecs(hookspecs)  # compact_compactor, compact_before/after


@hookimpl
def ketch_register_settings(register: Callable[[Any], None]) -> None:
    from ketch_compact.settings import COMPACTION

    register(COMPACTION)


@hookimpl
def ketch_register_events(register: Callable[[Any], None]) -> None:
    from ketch_context_kit.compaction import CompactionEvent

    register(CompactionEvent)


@hookimpl(optionalhook=True)
async def budget_fit_context(session: Session, budget: RequestBudget, overflow: int | None) -> None:
    from ketch_compact.settings import CompactorSettings

    trigger = session.kernel.settings.of(CompactorSettings).trigger
    if overflow is None and budget.fits and budget.projected <= trigger * budget.capacity:
        return  # nothing due: the runner and compaction's models load when one is
    from ketch_compact.runner import fit

    await fit(session, budget, overflow)


@hookimpl(trylast=True)
def compact_compactor(request: CompactionRequest) -> Any:
    from ketch_compact.compactor import run

    return run(request)


async def _compact(ctx: SlashContext) -> None:
    from ketch_compact.commands import slash_compact

    await slash_compact(ctx)


def _pin(ctx: SlashContext) -> None:
    from ketch_compact.commands import slash_pin

    slash_pin(ctx)


def _unpin(ctx: SlashContext) -> None:
    from ketch_compact.commands import slash_unpin

    slash_unpin(ctx)


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    register(
        Command(
            name="compact",
            help="compact the context now: /compact [what the summary should focus on]",
            slash=True,
            slash_run=_compact,
        )
    )
    register(
        Command(
            name="pin",
            help="keep a turn verbatim through compaction: /pin (last turn), /pin N, /pin ID",
            slash=True,
            slash_run=_pin,
        )
    )
    register(
        Command(
            name="unpin",
            help="let a pinned turn be compacted again: /unpin (last turn), /unpin N|ID|all",
            slash=True,
            slash_run=_unpin,
        )
    )
