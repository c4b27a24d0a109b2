"""Hooks the store plugin declares (``ketch_add_hookspecs``)."""

from __future__ import annotations

from typing import Any

from ketch.api import hookspec


@hookspec(firstresult=True)
def store_open_url(url: str, settings: Any, cipher: Any) -> Any:
    """Open the session store at ``url`` (``[storage] url``, ``KETCH_STORE_URL``, or
    ``ketch store migrate --to/--from URL``).

    Called when a store other than the default SQLite file is asked for. A plugin that
    serves the URL's scheme (``postgresql://`` is ``ketch_store_pg``'s) returns an open
    store implementing :class:`ketch.storage.Store` (and the journal of
    :class:`ketch_store_kit.journal.SqlJournal`); None lets the next plugin try. The store
    plugin itself answers ``sqlite:///PATH``. Raise ``StoreUnavailable`` for a URL you
    serve but cannot open. firstresult.
    """


@hookspec
def store_rotation_phase(phase: str) -> None:
    """``ketch store key rotate`` reached ``phase`` (locked, marked, staged, journal:N
    after N entries, sessions-done, committed, history, promoted; see
    :mod:`ketch_store.rotate`).

    Called in the rotating process, in order, as each phase is reached: tests install a
    plugin that stops the process at one (and kill it there) to prove every phase
    recovers. The return value is ignored; an implementation that raises is reported
    and skipped.
    """
