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


# --- the store's opening (ketch_store.opening) -------------------------------------------


@hookspec
def store_open_concurrently(kernel: Any) -> None:
    """Open the store while the first model request is under way instead of before it
    (a frontend's choice: headless). Until it is open ``store_pending`` answers True:
    the journal keeps the session's events until then, and an event that must be
    journaled before an effect (a tool starting) waits for it. Anything that needs the
    store earlier opens it at once; ``--no-save`` opens nothing. Return ignored.
    """


@hookspec(firstresult=True)
def store_pending(kernel: Any) -> bool | None:
    """Whether the store is being opened concurrently and is not open (or failed) yet.

    Asked by plugins that would read or write the store from a session's first events
    (checkpoints, approvals, the cipher's passphrase): while True they keep what they
    have until it is open. firstresult; None (the store plugin is not loaded): nothing
    is pending.
    """


@hookspec(firstresult=True)
def store_problem(kernel: Any) -> Any:
    """Why the store could not be opened (a ``StoreUnavailable``), once it was tried and
    failed; None when it is open, not tried yet, or not loaded. The session's notice has
    said it once: what asks uses it to stay quiet. firstresult.
    """
