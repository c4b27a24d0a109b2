"""ketch_store_pg: sessions in PostgreSQL, for a team or a fleet, sealed on the client.

``[storage] url = "postgresql://user@host/db"`` (or ``KETCH_STORE_URL``) puts every
session there instead of the SQLite file: the store plugin asks for it through its
``store_open_url`` hook, which this plugin answers for ``postgresql://`` URLs. Fields
are sealed with a team key that never reaches the server unwrapped (see
:mod:`ketch_store_pg.store`). Heavy imports (pg8000) happen inside the hook.
"""

from __future__ import annotations

from typing import Any

from ketch.api import hookimpl


@hookimpl(tryfirst=True)
def ketch_open_store(settings: Any, cipher: Any) -> Any:
    """The configured store, when ``[storage] url`` / ``KETCH_STORE_URL`` is PostgreSQL."""
    from ketch_store_kit.journal import store_url, writer_wait
    from ketch_store_kit.recorder import Recorder

    url = store_url(settings)
    if url is None or not _ours(url):
        return None
    wait = writer_wait(settings)
    store = store_open_url(url, settings, cipher)
    store.writer_wait = wait
    store.recorder = Recorder(store)
    return store


def _ours(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


@hookimpl(optionalhook=True)
def store_open_url(url: str, settings: Any, cipher: Any) -> Any:
    if not _ours(url):
        return None
    try:
        import pg8000  # noqa: F401
    except ImportError:
        from ketch.api import StoreUnavailable

        raise StoreUnavailable(
            "[storage] url is a PostgreSQL server, and its driver is not installed: pip install 'ketch[postgres]'",
            exists=True,
        ) from None
    from ketch_store_pg.leases import LEASE_SECONDS
    from ketch_store_pg.store import PgStore

    section = settings.section("storage") if settings is not None else {}
    return PgStore.open(
        url,
        cipher,
        lease=float(section.get("lease", LEASE_SECONDS)),
        reconnect_wait=float(section.get("reconnect_wait", 30.0)),
    )
