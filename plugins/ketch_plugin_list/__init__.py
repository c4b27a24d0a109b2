"""ketch_plugin_list: ``ketch plugins``, the listing of every plugin (essential).

Status, distribution and version, import time, the hooks each implements, what it
provides, its errors and warnings; ``--json`` for scripts; ``--check`` calls every
registration hook and compares it with the ``@provides`` declarations. Essential (never
blocked by an allow-list or ``--no-plugin``) because it is how a person finds out why
the other plugins are broken, blocked or disabled. Its entry module stays light: the
listing itself (``listing.py``) is imported when the command runs.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ketch.api import Command, StashKey, hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

    from ketch.api import Kernel

# Set while the listing fills a registry: the plugins listed from their ``@provides``
# declarations, which ``ketch_cached_registrations`` answers for instead of calling.
LISTED_FROM_DECLARATIONS = StashKey[frozenset[str]]()


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    parser.add_argument(
        "--check",
        action="store_true",
        help="call every registration hook as a session does (imports every tool and provider) and report declarations that do not match",
    )


def _run(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch_plugin_list.listing import run

    return run(kernel, json_output=bool(args.json), check=bool(getattr(args, "check", False)))


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    register(
        Command(
            name="plugins",
            help="list plugins: status, distribution, what each provides, hooks, import time",
            cli=True,
            configure=_configure,
            run=_run,
        )
    )


@hookimpl(tryfirst=True)
def ketch_cached_registrations(
    kernel: Kernel, hook: str, plugins: list[str]
) -> dict[str, list[Any]] | None:
    # While the listing fills a registry, the plugins that declare their names
    # (``@provides``) are not called: it lists them from their declarations.
    listed = kernel.stash.get(LISTED_FROM_DECLARATIONS)
    if listed is None:
        return None
    return {plugin: [] for plugin in plugins if plugin in listed}
