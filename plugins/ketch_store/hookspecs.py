"""Hooks the store plugin declares (``ketch_add_hookspecs``)."""

from __future__ import annotations

from typing import Any

from ketch import hookspec


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
