"""ketch_crypto: AES-256-GCM field encryption for the session store, key in the OS keyring.

Implements ``ketch_field_cipher``. The cipher is lazy: the keyring is touched only when
the store opens (``cipher.unlock(create=...)``) or first encrypts, never at import.
With ``storage.encryption = "off"`` it provides nothing, and the store runs in
plaintext, saying so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.settings import Settings
    from ketch.storage import FieldCipher


@hookimpl
def ketch_field_cipher(settings: Settings) -> FieldCipher | None:
    if settings.section("storage").get("encryption", "on") == "off":
        return None
    from ketch_crypto.cipher import AesGcmFieldCipher, DerivedKeys
    from ketch_crypto.keys import load_data_key

    return AesGcmFieldCipher(lambda create: DerivedKeys(load_data_key(create)))
