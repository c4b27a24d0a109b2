"""ketch_keyring: API keys in the OS keyring, and ``ketch auth set|status|delete``.

The kernel asks for a key only when the provider's environment variable is unset
(``api_key_env`` or the kind's usual variable); this plugin then answers from the
keyring (service ``ketch``, username = the provider's name). A keyring that is locked
or broken is reported as a one-line notice, never a traceback; a machine with no
keyring at all is simply a machine without stored keys.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import Command, hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel

log = logging.getLogger("ketch.keyring")


@hookimpl
def ketch_get_credential(provider: str, kind: str, kernel: Kernel | None) -> str | None:
    from ketch_keyring.store import CredentialStoreError, get_key

    kinds: dict[str, Any] = kernel.provider_kinds if kernel is not None else {}
    registered = kinds.get(kind)
    if registered is not None and not registered.needs_key:
        return None  # never touch (or unlock) the keyring for a provider that needs no key
    try:
        return get_key(provider)
    except CredentialStoreError as exc:
        if exc.missing_backend:
            log.debug("no keyring backend: %s", exc.message)
            return None
        message = f"could not read the API key for '{provider}' from the OS keyring: {exc.message}"
        if kernel is not None:
            kernel.notices.append(message)
        else:
            print(f"ketch: {message}", file=sys.stderr)
        return None


def _configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="auth_command", metavar="ACTION", required=True)
    set_ = sub.add_parser(
        "set", help="store a provider's API key (prompted, not echoed; or piped on stdin)"
    )
    set_.add_argument(
        "provider", help="provider name (openai, anthropic, or a [providers.NAME] from config)"
    )
    sub.add_parser(
        "status", help="which providers have a key, and where it comes from (never prints keys)"
    )
    delete = sub.add_parser("delete", help="remove a provider's API key from the OS keyring")
    delete.add_argument("provider")


def _run(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch_keyring.cli import run

    return run(kernel, args)


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_frontend_kit import credentials

    pluginmanager.add_hookspecs(credentials)  # the contract it implements


@hookimpl
def credentials_set(provider: str, key: str) -> str | None:
    from ketch_keyring.store import CredentialStoreError, set_key

    try:
        return set_key(provider, key) or "the OS keyring"
    except CredentialStoreError as exc:
        log.debug("could not keep the key of %s: %s", provider, exc.message)
        return None


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    register(
        Command(
            name="auth",
            help="manage API keys in the OS keyring: set, status, delete",
            cli=True,
            configure=_configure,
            run=_run,
        )
    )
