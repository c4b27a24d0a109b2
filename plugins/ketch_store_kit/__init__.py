"""The session-store author's kit: what every ketch store shares (a library; it registers nothing).

Both bundled stores (``ketch_store``: SQLite; ``ketch_store_pg``: PostgreSQL) build on
it, and neither imports the other:

* :mod:`.codec`: sealing fields through the cipher with the record identity as AAD;
* :mod:`.chain`: the journal's MAC chain and the classifier that names a broken one;
* :mod:`.binding`: the MAC over the columns that decide where a session's content goes
  (provider, model, mode, workspace index);
* :mod:`.journal`: :class:`~.journal.SqlJournal`, the store logic written once in SQL
  that SQLite and PostgreSQL both speak (append, load, verify, fork, approvals);
* :mod:`.record`, :mod:`.children`: from journal entries back to a session;
* :mod:`.recorder`: session events to journal entries;
* :mod:`.render`, :mod:`.commands`: ``ketch sessions`` over any such store;
* :mod:`.migrate`: copying every session from one store to another, verified.
* :mod:`.keeping`: whether a run's work can be kept (for the frontends that must not
  lose it: headless, background).
"""
