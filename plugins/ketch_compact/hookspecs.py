"""The hooks the compact plugin declares (``ketch_add_hookspecs``): the compactor that
shrinks the active context, and what other plugins may do around a compaction.
Implement them with ``@hookimpl(optionalhook=True)`` so your plugin still loads when
the compact plugin is disabled (they are then not called). The types are in
``ketch_context_kit.compaction``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch.api import hookspec, returns

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session
    from ketch_context_kit.compaction import CompactionRequest, CompactionResult


@hookspec(firstresult=True)
@returns("ketch_context_kit.compaction:CompactionResult")
def compact_compactor(request: CompactionRequest) -> CompactionResult | None:
    """Compact the active context so that it fits the budget in ``request``.

    Called before a provider request whose projected context passes the compaction
    trigger (``[compaction] trigger``), after a provider reports a context overflow,
    and for ``/compact``. Return a ``CompactionResult`` with the new active messages
    and a record of what was replaced, or None to let the next compactor try. A
    compactor that must wait (a model summarizer) may return an awaitable of that
    result instead. Stops at the first non-None result; the compact plugin's own
    compactors answer last. Never modifies the saved transcript.
    """


@hookspec
def compact_before(session: Session, reason: str) -> None:
    """Compaction is about to run (``reason``: auto, overflow, command). Return ignored."""


@hookspec
def compact_after(session: Session, result: CompactionResult) -> None:
    """Compaction finished; ``result`` holds the record. Return ignored."""
