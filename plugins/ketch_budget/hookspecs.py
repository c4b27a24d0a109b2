"""The hook the budget plugin declares (``ketch_add_hookspecs``): making room in the
active context for a request. Implement it with ``@hookimpl(optionalhook=True)`` so your
plugin still loads when the budget plugin is disabled (it is then not called). The
budget's types are in ``ketch_context_kit.request`` and ``ketch_context_kit.budget``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch.api import hookspec

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session
    from ketch_context_kit.request import RequestBudget


@hookspec
def budget_fit_context(session: Session, budget: RequestBudget, overflow: int | None) -> None:
    """Make room in the active context for the request about to be sent.

    Called before every provider request with its measured ``budget``
    (:class:`ketch_context_kit.request.RequestBudget`: the fixed part, the messages, the
    capacity), and once more after a provider rejected a request as too long, with
    ``overflow``: the effective capacity that error implies (None otherwise); may be
    awaited. A plugin that manages the context (compaction) replaces ``session.active``
    with :meth:`ketch.session.Session.set_active` when it decides to; the budget plugin
    measures again and stops the turn with ``context_overflow`` when it still does not
    fit. Raise :class:`ketch.errors.ContextOverflow` to stop it with your own
    explanation. The return value is ignored. With no implementation at all, a
    provider's context-length error ends the turn.
    """
