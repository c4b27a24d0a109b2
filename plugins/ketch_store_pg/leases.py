"""One writer per session across machines: leases on the server, renewed while held.

A lease is a row (``writers``: session, holder, host, pid, expires) that its holder
takes when the row is free or expired, and renews every third of its length from a
background thread. A holder that dies (SIGKILL, a lost machine, a cut network) stops
renewing, and once the lease expires the next ``--continue`` takes it over: recovery
by lease expiry, never by PID (a PID means nothing on another machine). Expiry is the
server's clock, so the machines' clocks need not agree.

Every journal append renews its session's lease *in its own transaction* and refuses
when the lease is no longer this process's (:meth:`Leases.fence`): a writer that was
paused past its lease and lost it to another machine stops instead of interleaving.

The same heartbeat renews this process's owner row (``owners``), which recovery reads
to tell a dispatched operation of a live process from one whose process is gone.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import threading
from collections.abc import Callable
from typing import Any

from ketch.api import KetchError
from ketch_store_pg.schema import NOW

LEASE_SECONDS = 30.0
POLL_SECONDS = 0.2


class LostLease(KetchError):
    """This process no longer holds the session's writer lease."""


class Leases:
    """The ``writers`` interface of :class:`ketch_store_kit.journal.SqlJournal`, on leases."""

    def __init__(self, store: Any, seconds: float = LEASE_SECONDS) -> None:
        self.store = store
        self.seconds = max(float(seconds), 1.0)
        self.me = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(6)}"
        self.host = socket.gethostname()
        self.held: set[str] = set()
        self.owner_registered = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- the writers interface ---------------------------------------------------------

    def holds(self, session_id: str) -> bool:
        return session_id in self.held

    def try_claim(self, session_id: str) -> bool:
        if session_id in self.held:
            return True
        taken = self.store.run(
            lambda conn: (
                conn.execute(
                    "INSERT INTO writers (session_id, holder, host, pid, expires) "
                    f"VALUES (?, ?, ?, ?, {NOW} + ?) "
                    "ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, host = excluded.host, "
                    "pid = excluded.pid, expires = excluded.expires "
                    f"WHERE writers.holder = excluded.holder OR writers.expires < {NOW}",
                    (session_id, self.me, self.host, os.getpid(), self.seconds),
                ).rowcount
            ),
            "taking a session's writer lease",
        )
        if taken == 1:
            self.held.add(session_id)
            self._heartbeat()
            return True
        return False

    def claim(
        self, session_id: str, wait: float, on_wait: Callable[[str], None] | None = None
    ) -> bool:
        """Take it, waiting up to ``wait`` seconds; ``on_wait(holder)`` once if busy."""
        from ketch_store_kit.journal import claim_waiting

        return claim_waiting(self, session_id, wait, on_wait, POLL_SECONDS)

    def holder(self, session_id: str) -> str:
        return self.holder_of(session_id)

    def holder_of(self, session_id: str) -> str:
        row = self.store.run(
            lambda conn: conn.execute(
                f"SELECT host, pid, expires - {NOW} FROM writers WHERE session_id = ?",
                (session_id,),
            ).fetchone(),
            "reading a writer lease",
        )
        if row is None:
            return "another process"
        host, pid, left = row
        return f"pid {pid} on {host}, lease {max(float(left), 0):.0f}s left"

    def release(self, session_id: str) -> None:
        if session_id not in self.held:
            return
        self.held.discard(session_id)
        with contextlib.suppress(KetchError):  # else it expires by itself
            self.store.run(
                lambda conn: conn.execute(
                    "DELETE FROM writers WHERE session_id = ? AND holder = ?",
                    (session_id, self.me),
                ),
                "releasing a writer lease",
            )

    def release_all(self) -> None:
        for session_id in list(self.held):
            self.release(session_id)

    def forget(self, session_id: str) -> None:
        self.release(session_id)

    # --- fencing and the owner row ---------------------------------------------------------

    def fence(self, conn: Any, session_id: str) -> None:
        """Inside a write transaction: renew the lease, or refuse if it is not ours any more."""
        renewed = conn.execute(
            f"UPDATE writers SET expires = {NOW} + ? WHERE session_id = ? AND holder = ?",
            (self.seconds, session_id, self.me),
        ).rowcount
        if renewed != 1:
            self.held.discard(session_id)
            raise LostLease(
                f"this ketch lost its writer lease on session {session_id} (not renewed within "
                f"{self.seconds:g}s, and another ketch may have taken the session over); stopping so that "
                "two writers never interleave. Run `ketch --continue` again to go on from what was saved"
            )

    def register_owner(self) -> str:
        if not self.owner_registered:
            self.store.run(
                lambda conn: conn.execute(
                    f"INSERT INTO owners (id, host, pid, expires) VALUES (?, ?, ?, {NOW} + ?) "
                    "ON CONFLICT (id) DO UPDATE SET expires = excluded.expires",
                    (self.me, self.host, os.getpid(), self.seconds),
                ),
                "registering this process",
            )
            self.owner_registered = True
            self._heartbeat()
        return self.me

    def owner_alive(self, owner: str) -> bool:
        row = self.store.run(
            lambda conn: conn.execute(
                f"SELECT expires >= {NOW} FROM owners WHERE id = ?", (owner,)
            ).fetchone(),
            "reading an owner lease",
        )
        return bool(row and row[0])

    def forget_owner(self, owner: str) -> None:
        self.store.run(
            lambda conn: conn.execute("DELETE FROM owners WHERE id = ?", (owner,)),
            "removing a dead owner",
        )

    # --- the heartbeat ---------------------------------------------------------------------

    def _heartbeat(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._beat, name="ketch-store-lease", daemon=True
            )
            self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            try:
                self.renew()
            except Exception:  # noqa: BLE001 - a missed beat is retried; fencing catches a lost lease
                continue

    def renew(self) -> None:
        held = list(self.held)

        def work(conn: Any) -> None:
            if held:
                marks = ",".join("?" * len(held))
                conn.execute(
                    f"UPDATE writers SET expires = {NOW} + ? WHERE holder = ? AND session_id IN ({marks})",
                    (self.seconds, self.me, *held),
                )
            if self.owner_registered:
                conn.execute(
                    f"UPDATE owners SET expires = {NOW} + ? WHERE id = ?",
                    (self.seconds, self.me),
                )

        self.store.run(work, "renewing leases", retry=False)

    def stop(self) -> None:
        self._stop.set()
        self.release_all()
        if self.owner_registered:
            with contextlib.suppress(KetchError):
                self.forget_owner(self.me)
            self.owner_registered = False
