"""Whether a run's work can be kept: the question a frontend asks before work it must not
lose (a headless run before a tool, a background run at its start)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel


def cannot_keep(kernel: Kernel) -> str | None:
    """Why this run's work cannot be kept, when it must be: a store that exists but
    cannot be opened (the work would silently not be kept), unless ``--no-save``. None:
    it is open, or there is none to open (the run goes on unsaved, said once by the
    session's notice). Opens the store, or waits for one opening concurrently."""
    from ketch.api import StoreUnavailable

    try:
        _ = kernel.store
    except StoreUnavailable as exc:
        if exc.exists and not getattr(kernel.args, "no_save", False):
            return exc.message
    return None
