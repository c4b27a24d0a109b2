"""``ketch auth set|status|delete``: manage API keys in the OS keyring. Never prints a key."""

from __future__ import annotations

import argparse
import getpass
import re
import sys
from typing import TYPE_CHECKING, Any

from ketch_keyring.store import (
    CredentialStoreError,
    backend,
    backend_name,
    delete_key,
    get_key,
    set_key,
)

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def run(kernel: Kernel, args: argparse.Namespace) -> int:
    action = args.auth_command
    try:
        if action == "status":
            return _status(kernel)
        provider = str(args.provider)
        if not NAME.match(provider):
            print(
                f"ketch: '{provider}' is not a provider name (letters, digits, '.', '_', '-')",
                file=sys.stderr,
            )
            return 2
        if action == "set":
            return _set(kernel, provider)
        return _delete(provider)
    except CredentialStoreError as exc:
        print(f"ketch: {exc.message}", file=sys.stderr)
        return 1


def _env_vars(kernel: Kernel, provider: str) -> list[str]:
    """The variables that would supply this provider's key before the keyring."""
    table = kernel.settings.providers.get(provider, {})
    kind = kernel.provider_kinds.get(str(table.get("kind") or provider))
    return [v for v in (table.get("api_key_env"), kind.env_key if kind else None) if v]


def _read_key(provider: str) -> str | None:
    if sys.stdin.isatty():
        try:
            return getpass.getpass(f"API key for {provider} (input hidden): ")
        except (EOFError, KeyboardInterrupt):
            print(file=sys.stderr)
            return None
    return sys.stdin.read()


def _set(kernel: Kernel, provider: str) -> int:
    try:
        backend()  # fail on a missing or locked keyring before asking for anything
    except CredentialStoreError as exc:
        if not exc.missing_backend:
            raise
        variable = next(iter(_env_vars(kernel, provider)), f"[providers.{provider}] api_key_env")
        print(
            f"ketch: no OS keyring is available to keep the key in; keep it in the environment instead: "
            f"`export {variable}=...` in your shell profile (ketch never writes keys to files)",
            file=sys.stderr,
        )
        return 1
    raw = _read_key(provider)
    key = (raw or "").strip()
    if not key:
        print("ketch: no key given; nothing stored", file=sys.stderr)
        return 1
    if any(c.isspace() for c in key):
        print("ketch: the key contains spaces or line breaks; nothing stored", file=sys.stderr)
        return 1
    where = set_key(provider, key)
    print(f"stored the API key for '{provider}' in the OS keyring ({where})")
    for var in _env_vars(kernel, provider):
        if kernel.environ.get(var):
            print(f"note: {var} is set in the environment and takes precedence over the keyring")
            break
    known = provider in kernel.settings.providers or provider in kernel.provider_kinds
    if not known:
        print(
            f"note: no provider '{provider}' is configured yet; add [providers.{provider}] to use this key"
        )
    return 0


def _delete(provider: str) -> int:
    if not delete_key(provider):
        print(f"ketch: no API key is stored for '{provider}' in the OS keyring", file=sys.stderr)
        return 1
    print(f"deleted the API key for '{provider}' from the OS keyring")
    return 0


def _status(kernel: Kernel) -> int:
    names = sorted(set(kernel.settings.providers) | set(kernel.provider_kinds))
    problem: str | None = None
    absent = False  # no keyring backend on this machine at all
    try:
        where = backend_name(backend())
    except CredentialStoreError as exc:
        problem, where, absent = exc.message, "", exc.missing_backend
    rows: list[tuple[str, str]] = []
    for name in names:
        source, failure = _source(kernel, name, where, problem, absent)
        problem = problem or failure
        rows.append((name, source))
    width = max((len(n) for n, _ in rows), default=8) + 2
    for name, source in rows:
        print(f"{name:<{width}}{source}")
    if problem:
        print(f"ketch: {problem}", file=sys.stderr)
        return 1
    return 0


def _source(
    kernel: Kernel, name: str, where: str, problem: str | None, absent: bool = False
) -> tuple[str, str | None]:
    """Where this provider's key comes from, and a keyring failure met on the way."""
    table = kernel.settings.providers.get(name, {})
    kind: Any = kernel.provider_kinds.get(str(table.get("kind") or name))
    variables = _env_vars(kernel, name)
    for var in variables:
        if kernel.environ.get(var):
            return f"environment ({var})", None
    if kind is not None and not kind.needs_key:
        return "no key needed", None
    if absent:
        return (
            f"none: {' or '.join(f'set {v}' for v in variables[:1]) or 'set api_key_env'} (no OS keyring here)",
            None,
        )
    if problem:
        return "unknown (keyring unavailable)", None
    try:
        stored = get_key(name)
    except CredentialStoreError as exc:
        return "unknown (keyring unavailable)", exc.message
    if stored:
        return f"keyring ({where})", None
    ways = " or ".join([*(f"set {v}" for v in variables[:1]), f"run `ketch auth set {name}`"])
    return f"none: {ways}", None
