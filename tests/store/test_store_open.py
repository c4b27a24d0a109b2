"""Opening the store: key minting, recovery-locked, wrong key, modes, schema, tampered rows."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from ketch.errors import KetchError
from ketch.settings import Settings
from ketch.storage import IntegrityError, RecoveryLocked, Store
from ketch.testing.keyring_backend import LockedKeyring, MemoryKeyring
from ketch_crypto import ketch_field_cipher
from ketch_crypto.cipher import AesGcmFieldCipher
from ketch_crypto.keys import SERVICE, USERNAME
from ketch_store.schema import SCHEMA_VERSION
from ketch_store.store import SqliteStore
from tests.store.conftest import db_path

WS = "/home/someone/project"


def keyring_cipher(encryption: str = "on") -> AesGcmFieldCipher | None:
    return ketch_field_cipher(
        settings=Settings.model_validate({"storage": {"encryption": encryption}})
    )


def open_store(encryption: str = "on") -> SqliteStore:
    return SqliteStore.open(db_path(), keyring_cipher(encryption), encryption=encryption)


def populate(
    store: SqliteStore, session_id: str = "ses_a", texts: tuple[str, ...] = ("first", "second")
) -> None:
    store.ensure_session(
        session_id, workspace=WS, provider="p", model="m", mode="build", created=1.0
    )
    for number, text in enumerate(texts):
        message = {
            "id": f"msg_{session_id}_{number}",
            "role": "user",
            "parts": [{"type": "text", "text": text}],
        }
        store.append(
            session_id,
            "message",
            message,
            event_id=f"ev_{session_id}_{number}",
            ts=2.0 + number,
            messages=1,
        )
    store.set_title(session_id, texts[0])
    store.rename_session(session_id, f"name of {session_id}")


def fingerprint(path: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.parent.glob(path.name + "*"))
        if p.is_file()
    }


def test_new_store_mints_key_and_reopens(memory_keyring: MemoryKeyring) -> None:
    store = open_store()
    assert isinstance(store, Store) and store.encrypted
    assert (SERVICE, USERNAME) in memory_keyring.values
    populate(store)
    store.close()
    key = memory_keyring.values[(SERVICE, USERNAME)]
    again = open_store()
    assert memory_keyring.values[(SERVICE, USERNAME)] == key
    record = again.load_session("ses_a")
    assert [m.text for m in record.transcript] == ["first", "second"]
    assert record.name == "name of ses_a" and record.workspace == WS
    mode = stat.S_IMODE(db_path().stat().st_mode)
    assert mode & 0o077 == 0, oct(mode)
    with contextlib.closing(sqlite3.connect(db_path())) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    again.close()


def test_key_deleted_is_recovery_locked_and_changes_nothing(memory_keyring: MemoryKeyring) -> None:
    store = open_store()
    populate(store)
    store.close()
    before = fingerprint(db_path())
    memory_keyring.delete_password(SERVICE, USERNAME)
    with pytest.raises(RecoveryLocked, match="recovery-locked") as caught:
        open_store()
    assert "will not create a new key" in caught.value.message
    assert memory_keyring.values == {}  # no key minted over the data
    assert fingerprint(db_path()) == before
    # and the CLI-facing path through the kernel hooks says the same
    with pytest.raises(RecoveryLocked):
        open_store()
    assert fingerprint(db_path()) == before


def test_locked_keyring_is_recovery_locked() -> None:
    import keyring

    store = open_store()
    populate(store)
    store.close()
    before = fingerprint(db_path())
    keyring.set_keyring(LockedKeyring())
    with pytest.raises(RecoveryLocked, match="locked"):
        open_store()
    assert fingerprint(db_path()) == before


def test_wrong_key_is_an_integrity_error_and_writes_nothing(memory_keyring: MemoryKeyring) -> None:
    store = open_store()
    populate(store)
    store.close()
    before = fingerprint(db_path())
    memory_keyring.values[(SERVICE, USERNAME)] = (
        "ketch-data-key:v1:" + __import__("base64").b64encode(os.urandom(32)).decode()
    )
    with pytest.raises(IntegrityError, match="does not open"):
        open_store()
    assert fingerprint(db_path()) == before


def test_no_silent_plaintext() -> None:
    with pytest.raises(KetchError, match="refusing to store sessions in plaintext"):
        SqliteStore.open(db_path(), None, encryption="on")
    assert not db_path().exists()


def test_encryption_off_is_plaintext_and_modes_never_mix(memory_keyring: MemoryKeyring) -> None:
    plain = open_store("off")
    assert not plain.encrypted and memory_keyring.values == {}
    populate(plain)
    plain.close()
    assert b"first" in db_path().read_bytes() + b"".join(
        p.read_bytes() for p in db_path().parent.glob("sessions.db-wal")
    )
    with pytest.raises(KetchError, match="created unencrypted"):
        open_store("on")
    _remove_db()
    encrypted = open_store("on")
    populate(encrypted)
    encrypted.close()
    with pytest.raises(KetchError, match="is encrypted"):
        open_store("off")


def _remove_db() -> None:
    for path in db_path().parent.glob("sessions.db*"):
        path.unlink()


def test_newer_schema_and_foreign_files_are_refused() -> None:
    open_store().close()
    with contextlib.closing(sqlite3.connect(db_path())) as raw:
        raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(KetchError, match="newer ketch"):
        open_store()
    _remove_db()
    db_path().write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(KetchError, match="cannot open the session store"):
        open_store()
    _remove_db()
    with contextlib.closing(sqlite3.connect(db_path())) as raw:
        raw.execute("CREATE TABLE something (x)")
        raw.commit()
    with pytest.raises(KetchError, match="not a ketch session store"):
        open_store()


def test_empty_file_is_started_fresh() -> None:
    db_path().parent.mkdir(parents=True, exist_ok=True)
    db_path().write_bytes(b"")
    store = open_store()
    populate(store)
    assert len(store.load_session("ses_a").transcript) == 2


# --- tampering with the database file -------------------------------------------------------


@contextlib.contextmanager
def _raw() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(db_path(), isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()


def _load_all(store: SqliteStore) -> None:
    for session_id in ("ses_a", "ses_b"):
        store.load_session(session_id)
    store.list_sessions()


@pytest.fixture
def two_sessions() -> SqliteStore:
    store = open_store()
    populate(store, "ses_a", ("alpha one", "alpha two"))
    populate(store, "ses_b", ("beta one", "beta two"))
    _load_all(store)
    return store


def test_swapping_journal_payloads_between_rows(two_sessions: SqliteStore) -> None:
    with _raw() as raw:
        (a,), (b,) = raw.execute(
            "SELECT payload FROM journal WHERE session_id = 'ses_a' ORDER BY seq"
        ).fetchall()
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            raw.execute(
                "UPDATE journal SET payload = ? WHERE session_id = 'ses_a' AND seq = 1", (b,)
            )
        with pytest.raises(sqlite3.IntegrityError, match="only with their session"):
            raw.execute("DELETE FROM journal WHERE session_id = 'ses_a'")
        # a tamperer with the file can drop the guard, but not forge the seal
        raw.execute("DROP TRIGGER journal_append_only")
        raw.execute("UPDATE journal SET payload = ? WHERE session_id = 'ses_a' AND seq = 1", (b,))
        raw.execute("UPDATE journal SET payload = ? WHERE session_id = 'ses_a' AND seq = 2", (a,))
    with pytest.raises(
        IntegrityError, match="entry 1 was written as entry 2 .entries were reordered"
    ):
        two_sessions.load_session("ses_a")
    two_sessions.load_session("ses_b")  # the other session is untouched


def test_moving_a_payload_to_another_session(two_sessions: SqliteStore) -> None:
    with _raw() as raw:
        raw.execute("DROP TRIGGER journal_append_only")
        (b,) = raw.execute(
            "SELECT payload FROM journal WHERE session_id = 'ses_b' AND seq = 1"
        ).fetchone()
        raw.execute("UPDATE journal SET payload = ? WHERE session_id = 'ses_a' AND seq = 1", (b,))
    with pytest.raises(IntegrityError):
        two_sessions.load_session("ses_a")


def test_swapping_columns_and_rows_of_sessions(two_sessions: SqliteStore) -> None:
    with _raw() as raw:
        raw.execute("UPDATE sessions SET name = title, title = name WHERE id = 'ses_a'")
    with pytest.raises(IntegrityError, match="sessions"):
        two_sessions.load_session("ses_a")
    with pytest.raises(IntegrityError):
        two_sessions.list_sessions()
    errors: list[str] = []
    rows = two_sessions.list_sessions(errors=errors)
    assert [r.id for r in rows] == ["ses_b"] and len(errors) == 1 and "ses_a" in errors[0]
    with _raw() as raw:
        raw.execute(
            "UPDATE sessions SET name = title, title = name WHERE id = 'ses_a'"
        )  # swap back
        (wb,) = raw.execute("SELECT workspace FROM sessions WHERE id = 'ses_b'").fetchone()
        raw.execute("UPDATE sessions SET workspace = ? WHERE id = 'ses_a'", (wb,))
    with pytest.raises(IntegrityError, match="workspace"):
        two_sessions.load_session("ses_a")


@pytest.mark.parametrize("region", ["version", "key_id", "nonce", "ciphertext", "tag"])
def test_flipping_a_byte_in_a_stored_field(two_sessions: SqliteStore, region: str) -> None:
    with _raw() as raw:
        raw.execute("DROP TRIGGER journal_append_only")
        (payload,) = raw.execute(
            "SELECT payload FROM journal WHERE session_id = 'ses_a' AND seq = 2"
        ).fetchone()
        offsets = {"version": 0, "key_id": 2, "nonce": 8, "ciphertext": 20, "tag": len(payload) - 3}
        tampered = bytearray(payload)
        tampered[offsets[region]] ^= 0x04
        raw.execute(
            "UPDATE journal SET payload = ? WHERE session_id = 'ses_a' AND seq = 2",
            (bytes(tampered),),
        )
    with pytest.raises(IntegrityError):
        two_sessions.load_session("ses_a")


def test_truncated_and_emptied_fields(two_sessions: SqliteStore) -> None:
    with _raw() as raw:
        (name,) = raw.execute("SELECT name FROM sessions WHERE id = 'ses_a'").fetchone()
        raw.execute("UPDATE sessions SET name = ? WHERE id = 'ses_a'", (name[:-1],))
        raw.execute("UPDATE sessions SET title = x'' WHERE id = 'ses_b'")
    with pytest.raises(IntegrityError, match="truncated|authentication"):
        two_sessions.load_session("ses_a")
    with pytest.raises(IntegrityError, match="truncated"):
        two_sessions.load_session("ses_b")


def test_relabelled_entry_kind_is_detected(two_sessions: SqliteStore) -> None:
    with _raw() as raw:
        raw.execute("DROP TRIGGER journal_append_only")
        raw.execute("UPDATE journal SET kind = 'state' WHERE session_id = 'ses_a' AND seq = 1")
    with pytest.raises(IntegrityError):
        two_sessions.load_session("ses_a")


def test_approvals_are_sealed_per_workspace(two_sessions: SqliteStore) -> None:
    store = two_sessions
    store.add_approval(WS, "shell:git status")
    store.add_approval(WS, "shell:git status")  # idempotent
    store.add_approval("/elsewhere", "shell:make")
    assert store.list_approvals(WS) == ["shell:git status"]
    assert store.list_approvals("/elsewhere") == ["shell:make"]
    with _raw() as raw:
        assert b"git status" not in b"".join(
            r[0] for r in raw.execute("SELECT scope FROM approvals")
        )
        (other,) = raw.execute(
            "SELECT workspace_index FROM approvals WHERE scope_index != (SELECT min(scope_index) FROM approvals)"
        ).fetchone()
        raw.execute(
            "UPDATE approvals SET workspace_index = ? WHERE workspace_index != ?", (other, other)
        )
    with pytest.raises(IntegrityError):
        store.list_approvals(WS) + store.list_approvals("/elsewhere")
    assert store.remove_approval("/nowhere", "shell:make") is False


def test_a_first_open_that_died_before_writing_meta_is_finished_later() -> None:
    open_store().close()
    with contextlib.closing(sqlite3.connect(db_path())) as raw:
        raw.execute("DELETE FROM meta")
        raw.commit()
    store = open_store()
    populate(store)
    assert store.load_session("ses_a").name == "name of ses_a"


def test_an_unusable_state_dir_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(KetchError, match="cannot open the session store in"):
        SqliteStore.open(blocker / "state" / "sessions.db", keyring_cipher())
