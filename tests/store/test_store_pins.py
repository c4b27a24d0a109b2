"""MCP description pins are filed under an HMAC of the workspace path keyed by the store
(not a bare hash anyone can recompute from a guessed path), and that name outlives a key
rotation."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from types import SimpleNamespace

from ketch.storage import StoreUnavailable
from ketch_crypto.cipher import AesGcmFieldCipher
from ketch_mcp.pins import PinStore, keyed_name, workspace_key
from ketch_store.rotate import _reseal_database
from ketch_store.store import SqliteStore
from ketch_store_kit.codec import Fields
from tests.store.conftest import db_path

WORKSPACE = Path("/home/someone/secret-project")


def store_for(key: bytes) -> SqliteStore:
    return SqliteStore.open(db_path(), AesGcmFieldCipher.from_key(key))


def test_pins_are_named_by_a_keyed_digest(tmp_path: Path) -> None:
    key = os.urandom(32)
    store = store_for(key)
    pins_file = tmp_path / "mcp-pins.json"
    pins = PinStore(pins_file, WORKSPACE, keyed_name(SimpleNamespace(store=store)))
    assert pins.check("mcp__s__tool", "digest-1") == "new"
    data = json.loads(pins_file.read_text())
    name = next(iter(data))
    assert name.startswith("k1-") and name != workspace_key(WORKSPACE)
    raw = pins_file.read_text()
    assert str(WORKSPACE) not in raw and workspace_key(WORKSPACE) not in raw
    assert hashlib.sha256(str(WORKSPACE).encode()).hexdigest() not in raw
    assert pins.check("mcp__s__tool", "digest-2") == "changed"  # still pinned under that name
    store.close()

    # The same store reopened: the same name. Another store's key: another name.
    again = store_for(key)
    assert PinStore(pins_file, WORKSPACE, keyed_name(SimpleNamespace(store=again))).key == name
    # A rotation re-encrypts everything but keeps the lookup-index key: pins stay found.
    new_key = os.urandom(32)
    with again.lock:
        _reseal_database(
            again.conn,
            again.fields,
            Fields(again.fields.cipher.with_key(new_key)),
            lambda line: None,
            lambda phase: None,  # no fault injected between the phases
        )  # type: ignore[attr-defined]
    again.close()
    after = store_for(new_key)
    assert after.fields.cipher.key_id != AesGcmFieldCipher.from_key(key).key_id  # type: ignore[attr-defined]
    assert PinStore(pins_file, WORKSPACE, keyed_name(SimpleNamespace(store=after))).key == name
    after.close()
    other_key_store = SqliteStore.open(
        tmp_path / "other.db", AesGcmFieldCipher.from_key(os.urandom(32))
    )
    assert (
        PinStore(pins_file, WORKSPACE, keyed_name(SimpleNamespace(store=other_key_store))).key
        != name
    )
    other_key_store.close()


def test_unkeyed_pins_move_under_the_keyed_name(tmp_path: Path) -> None:
    pins_file = tmp_path / "mcp-pins.json"
    unkeyed = PinStore(pins_file, WORKSPACE)  # no store open (--no-save, no key)
    assert unkeyed.key == workspace_key(WORKSPACE)
    unkeyed.check("mcp__s__old", "h-old")
    unkeyed.check("mcp__s__both", "h-unkeyed")
    store = store_for(os.urandom(32))
    keyed = PinStore(pins_file, WORKSPACE, keyed_name(SimpleNamespace(store=store)))
    data = json.loads(pins_file.read_text())
    data[keyed.key] = {"mcp__s__both": {"hash": "h-keyed"}}
    pins_file.write_text(json.dumps(data))
    entries = keyed.entries()
    assert entries == {
        "mcp__s__old": {"hash": "h-old"},
        "mcp__s__both": {"hash": "h-keyed"},
    }  # a keyed pin wins
    assert workspace_key(WORKSPACE) not in json.loads(pins_file.read_text())
    store.close()


def test_no_store_no_keyed_name() -> None:
    class Closed:
        @property
        def store(self) -> object:
            raise StoreUnavailable("recovery-locked", exists=True)

    assert keyed_name(Closed()) is None
    assert keyed_name(SimpleNamespace(store=None)) is None
