"""Hooks the encryption plugin declares (``ketch_add_hookspecs``): how a frontend that can
ask the person (the interactive shell) sets up the session key where there is no OS
keyring. A frontend implements none of them; it calls them, when the plugin is loaded."""

from __future__ import annotations

from typing import Any

from ketch.api import hookspec


@hookspec(firstresult=True)
def crypto_storage_question(kernel: Any) -> dict[str, Any] | None:
    """Whether the session store needs the person to choose where its key lives: a new
    store, ``[storage] key = "auto"``, no usable OS keyring, nothing chosen before and
    no ``KETCH_PASSPHRASE``. Returns ``{"title": str, "choices": [{"id", "label",
    "protects", "recommended"}, ...], "passphrase_min_length": int}``, the recommended choice first; None when there
    is nothing to ask (then nothing is asked, and the store opens as configured).
    ``passphrase_min_length``: the shortest passphrase it accepts."""


@hookspec(firstresult=True)
def crypto_set_up_storage(kernel: Any, choice: str, passphrase: str | None) -> str | None:
    """Make the session key the way the person chose (``"passphrase"``, with the one
    they typed, or ``"file"``) and remember the choice (``[storage] key`` in the user's
    config.toml). Returns one line saying what was done; raises ``KetchError`` with a
    line to show when it cannot (a passphrase too short)."""
