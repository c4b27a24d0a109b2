"""The field cipher alone: envelope, tamper detection, nonces, the lookup index, the keyring."""

from __future__ import annotations

import os

import pytest

from ketch.errors import KetchError
from ketch.storage import FieldCipher, IntegrityError, RecoveryLocked
from ketch.testing.keyring_backend import LockedKeyring, MemoryKeyring
from ketch_crypto.cipher import (
    HEADER_BYTES,
    MIN_ENVELOPE,
    NONCE_BYTES,
    AesGcmFieldCipher,
    DerivedKeys,
)
from ketch_crypto.keys import (
    SERVICE,
    USERNAME,
    decode_key,
    encode_key,
    insecure_backend,
    load_data_key,
)

AAD = b"ketch/record-v1/journal/payload/ses_1/1/message/ev_1"
PLAINTEXT = b'{"role":"user","text":"hello world"}'


def cipher() -> AesGcmFieldCipher:
    return AesGcmFieldCipher.from_key(os.urandom(32))


def test_round_trip_and_protocol() -> None:
    c = cipher()
    assert isinstance(c, FieldCipher)
    envelope = c.encrypt(PLAINTEXT, AAD)
    assert envelope[0] == 1 and len(envelope) == MIN_ENVELOPE + len(PLAINTEXT)
    assert PLAINTEXT not in envelope
    assert c.decrypt(envelope, AAD) == PLAINTEXT
    assert c.decrypt(c.encrypt(b"", AAD), AAD) == b""


def test_flipping_any_bit_of_any_byte_is_an_integrity_error() -> None:
    c = cipher()
    envelope = c.encrypt(PLAINTEXT, AAD)
    # every byte: version, key id, nonce, ciphertext and tag
    for position in range(len(envelope)):
        for bit in (0x01, 0x80):
            tampered = bytearray(envelope)
            tampered[position] ^= bit
            with pytest.raises(IntegrityError):
                c.decrypt(bytes(tampered), AAD)


def test_regions_are_each_covered() -> None:
    c = cipher()
    envelope = c.encrypt(PLAINTEXT, AAD)
    nonce_at = HEADER_BYTES
    tag_at = len(envelope) - 16
    for position in (
        nonce_at,
        nonce_at + NONCE_BYTES - 1,
        nonce_at + NONCE_BYTES,
        tag_at,
        len(envelope) - 1,
    ):
        tampered = bytearray(envelope)
        tampered[position] ^= 0xFF
        with pytest.raises(IntegrityError, match="authentication"):
            c.decrypt(bytes(tampered), AAD)


def test_truncation_at_every_length_and_empty() -> None:
    c = cipher()
    envelope = c.encrypt(PLAINTEXT, AAD)
    for length in range(len(envelope)):
        with pytest.raises(IntegrityError):
            c.decrypt(envelope[:length], AAD)
    with pytest.raises(IntegrityError, match="truncated"):
        c.decrypt(b"", AAD)
    # appended bytes are not tolerated either
    with pytest.raises(IntegrityError):
        c.decrypt(envelope + b"\x00", AAD)


def test_moved_to_another_record_or_column() -> None:
    c = cipher()
    envelope = c.encrypt(PLAINTEXT, AAD)
    for other in (
        b"ketch/record-v1/journal/payload/ses_1/2/message/ev_1",  # another row
        b"ketch/record-v1/sessions/name/ses_1",  # another column
        b"ketch/record-v2/journal/payload/ses_1/1/message/ev_1",  # another schema version
        b"",
    ):
        with pytest.raises(IntegrityError):
            c.decrypt(envelope, other)


def test_a_wrong_key_is_an_integrity_error() -> None:
    envelope = cipher().encrypt(PLAINTEXT, AAD)
    with pytest.raises(IntegrityError, match="different key"):
        cipher().decrypt(envelope, AAD)
    # even when the header is forged to carry the other key's id, the tag fails
    a, b = os.urandom(32), os.urandom(32)
    forged = bytearray(AesGcmFieldCipher.from_key(a).encrypt(PLAINTEXT, AAD))
    forged[1:HEADER_BYTES] = DerivedKeys(b).key_id
    with pytest.raises(IntegrityError, match="authentication"):
        AesGcmFieldCipher.from_key(b).decrypt(bytes(forged), AAD)


def test_plaintext_tagged_values_are_rejected_when_encrypted() -> None:
    with pytest.raises(IntegrityError, match="envelope version"):
        cipher().decrypt(b"\x00" + PLAINTEXT + b"\x00" * MIN_ENVELOPE, AAD)


def test_100000_encryptions_use_100000_distinct_nonces() -> None:
    c = cipher()
    nonces = {
        c.encrypt(b"x", AAD)[HEADER_BYTES : HEADER_BYTES + NONCE_BYTES] for _ in range(100_000)
    }
    assert len(nonces) == 100_000


def test_index_is_keyed_and_deterministic() -> None:
    key = os.urandom(32)
    one, same, other = AesGcmFieldCipher.from_key(key), AesGcmFieldCipher.from_key(key), cipher()
    assert one.index("/home/me/project") == same.index("/home/me/project")
    assert one.index("/home/me/project") != one.index("/home/me/project2")
    assert one.index("/home/me/project") != other.index("/home/me/project")
    assert len(one.index("x")) == 64 and "project" not in one.index("/home/me/project")


# --- the key in the keyring ------------------------------------------------------------


def test_key_is_minted_once_and_then_read(memory_keyring: MemoryKeyring) -> None:
    key = load_data_key(create=True)
    assert len(key) == 32
    assert memory_keyring.values[(SERVICE, USERNAME)] == encode_key(key)
    assert load_data_key(create=True) == key  # never replaced while present
    assert load_data_key(create=False) == key


def test_missing_key_without_create_is_recovery_locked(memory_keyring: MemoryKeyring) -> None:
    with pytest.raises(RecoveryLocked, match="missing"):
        load_data_key(create=False)
    assert memory_keyring.values == {}  # nothing minted


def test_locked_keyring_is_recovery_locked() -> None:
    import keyring

    keyring.set_keyring(LockedKeyring())
    with pytest.raises(RecoveryLocked, match="locked"):
        load_data_key(create=False)
    with pytest.raises(KetchError, match="locked"):
        load_data_key(create=True)


def test_no_keyring_and_plaintext_keyrings_are_refused() -> None:
    import keyring
    from keyring.backends import fail, null

    keyring.set_keyring(fail.Keyring())
    with pytest.raises(KetchError, match="no OS keyring"):
        load_data_key(create=True)
    with pytest.raises(RecoveryLocked):
        load_data_key(create=False)
    keyring.set_keyring(null.Keyring())
    with pytest.raises(KetchError, match="null"):
        load_data_key(create=True)

    class PlaintextKeyring(MemoryKeyring):  # stands for keyrings.alt.file.PlaintextKeyring
        pass

    backend = PlaintextKeyring()
    assert insecure_backend(backend) is not None
    keyring.set_keyring(backend)
    with pytest.raises(KetchError, match="plaintext"):
        load_data_key(create=True)
    assert backend.values == {}
    assert insecure_backend(MemoryKeyring()) is None


def test_malformed_key_is_recovery_locked(memory_keyring: MemoryKeyring) -> None:
    memory_keyring.set_password(SERVICE, USERNAME, "not a key")
    with pytest.raises(RecoveryLocked, match="not a ketch data key"):
        load_data_key(create=True)
    memory_keyring.set_password(SERVICE, USERNAME, "ketch-data-key:v1:c2hvcnQ=")
    with pytest.raises(RecoveryLocked, match="malformed"):
        load_data_key(create=False)
    assert decode_key(encode_key(b"k" * 32)) == b"k" * 32


def test_the_plugin_hook_is_lazy_and_honours_encryption_off(memory_keyring: MemoryKeyring) -> None:
    import ketch_crypto
    from ketch.settings import Settings

    c = ketch_crypto.ketch_field_cipher(settings=Settings())
    assert c is not None and memory_keyring.values == {}  # nothing touched yet
    assert c.decrypt(c.encrypt(b"x", b"a"), b"a") == b"x"
    assert len(memory_keyring.values) == 1
    assert (
        ketch_crypto.ketch_field_cipher(
            settings=Settings.model_validate({"storage": {"encryption": "off"}})
        )
        is None
    )
