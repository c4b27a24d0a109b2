"""The credentials contract: a frontend with an API key to keep, and a secret store.

Reading a key is the kernel's (``ketch_get_credential``: it resolves every provider's
key); keeping one the person pasted is between a frontend (the shell's first-run setup)
and a secret store (the keyring plugin), so the contract lives in this library: each
side declares it from ``ketch_add_hookspecs`` (``pluginmanager.add_hookspecs(
ketch_frontend_kit.credentials)``; declaring twice is harmless), and the frontend calls
:func:`keep`.
"""

from __future__ import annotations

from typing import Any

from ketch.api import hookspec, returns


@hookspec(firstresult=True)
@returns(str)
def credentials_set(provider: str, kind: str, key: str) -> str | None:
    """Keep the API key ``key`` of provider ``provider`` (of kind ``kind``) in a secret
    store (the first-run setup calls it with the key the person pasted).

    Called when a frontend has a key to keep. Return where it went, in words ("the
    GNOME keyring"), or None when this store cannot keep it (none is available). Stops at
    the first non-None result. The key must never reach a file, an event or a log.
    """


def keep(kernel: Any, provider: str, key: str, kind: str = "") -> str | None:
    """Where a secret store kept ``key`` (in words), or None when none could."""
    where = kernel.hooks.first("credentials_set", provider=provider, kind=kind or provider, key=key)
    return where or None
