"""The team of a PostgreSQL store: list, add and remove members; rotate the team key.

Adding wraps the current data key to the newcomer's public key (an existing member does
it; the newcomer only ever sent a public key). Removing deletes the member's wrapping
and then rotates: a new data key, every sealed field, journal entry (its chain link and
the session's head recomputed), binding, approval, blob and member name re-sealed in
one transaction, and the new key wrapped to every remaining member. The key epoch
changes in the same transaction, so a ketch still running with the old key writes
nothing more; the removed member's old key opens nothing written afterwards (and the
rows re-sealed now).
"""

from __future__ import annotations

import os
import time
from typing import Any

from ketch.api import IntegrityError, KetchError
from ketch_store_kit.codec import Fields
from ketch_store_kit.reseal import again, reseal_all
from ketch_store_pg.store import EPOCH_LOCK, PgStore, _context


def members(store: PgStore) -> list[dict[str, Any]]:
    mine = store.team.fingerprint()
    with store.lock, store.reading("the members"):
        rows = store.pg.execute(
            "SELECT fingerprint, public_key, name, added FROM members ORDER BY added, fingerprint"
        ).fetchall()
    return [
        {
            "name": store.fields.open_text("members", "name", fp, bytes(name)),
            "fingerprint": fp,
            "public_key": public,
            "added": float(added),
            "you": fp == mine,
        }
        for fp, public, name, added in rows
    ]


def add(store: PgStore, name: str, public: str) -> str:
    """Wrap the team key to ``public``; returns its fingerprint."""
    name = " ".join(name.split())
    if not name:
        raise KetchError("a member needs a name", exit_code=2)
    fingerprint = store.team.fingerprint(public)  # validates the key
    key = store.fields.cipher.data_key()  # type: ignore[attr-defined]
    taken = {m["name"]: m["fingerprint"] for m in members(store)}
    if fingerprint in taken.values():
        raise KetchError(f"that key is already a member ({fingerprint})", exit_code=1)
    if name in taken:
        raise KetchError(f"there is already a member named {name!r}", exit_code=1)
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO members (fingerprint, public_key, name, wrapped, added) VALUES (?, ?, ?, ?, ?)",
            (
                fingerprint,
                public.strip(),
                store.fields.seal_text("members", "name", fingerprint, name),
                store.team.wrap(key, public.strip(), _context(store.store_id, fingerprint)),
                time.time(),
            ),
        )
    return fingerprint


def remove(store: PgStore, who: str) -> dict[str, Any]:
    """Remove a member (by name or fingerprint), then rotate the team key."""
    found = [m for m in members(store) if who in (m["name"], m["fingerprint"])]
    if not found:
        raise KetchError(f"no member {who!r} (`ketch store key members list`)", exit_code=1)
    member = found[0]
    if member["you"]:
        raise KetchError(
            "you cannot remove yourself (the rotation that follows needs a member who stays); ask another member",
            exit_code=2,
        )
    done = rotate(store, drop=member["fingerprint"])
    done["removed"] = member["name"]
    return done


def rotate(store: PgStore, drop: str | None = None) -> dict[str, Any]:
    """A new team key for everything, wrapped to every member (but ``drop``), one transaction."""
    began = time.monotonic()
    old = store.fields
    new_key = store.team.mint()
    new = Fields(store.cipher_for(new_key))
    new.cipher.set_index_key(old.cipher.index_key())  # type: ignore[attr-defined]
    epoch = os.urandom(8).hex().encode()

    counts: dict[str, Any] = {}
    with store.lock, store.reading("a key rotation"):
        conn = store.pg
        try:
            with conn.transaction():
                conn.execute(f"SELECT pg_advisory_xact_lock({EPOCH_LOCK})")  # waits out every write
                row = conn.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()
                if row is None or bytes(row[0]) != store.epoch:
                    raise KetchError("another member rotated the team key meanwhile; run again")
                conn.execute("SET LOCAL ketch.rotating = 'on'")  # lifts the append-only trigger
                if drop is not None:
                    conn.execute("DELETE FROM members WHERE fingerprint = ?", (drop,))
                counts = reseal_all(conn, old, new)
                members = conn.execute(
                    "SELECT fingerprint, public_key, name FROM members"
                ).fetchall()
                for fingerprint, public, name in members:
                    conn.execute(
                        "UPDATE members SET name = ?, wrapped = ? WHERE fingerprint = ?",
                        (
                            again(old, new, "members", "name", fingerprint, name),
                            store.team.wrap(new_key, public, _context(store.store_id, fingerprint)),
                            fingerprint,
                        ),
                    )
                counts["members"] = len(members)
                conn.execute("UPDATE meta SET value = ? WHERE key = 'epoch'", (epoch,))
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('rotated', ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (str(time.time()).encode(),),
                )
        except IntegrityError as exc:
            raise KetchError(
                f"rotation stopped, nothing changed: a field does not open under the current key ({exc}). "
                "Run `ketch sessions verify --all` first"
            ) from None
    store.fields, store.epoch = new, epoch
    counts["seconds"] = round(time.monotonic() - began, 3)
    return counts
