"""``ketch plugin ...``: Claude Code plugins and their marketplaces.

Its parser's arguments are set up by the plugin's entry module (the command line is
built at every start; this module loads when the command runs).
(``ketch plugins``, plural, is another command: it lists ketch's own Python plugins.)
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel

HELP = (
    "Claude Code plugins: add a marketplace, install, list, enable, disable, update, "
    "trust, uninstall (ketch's own Python plugins: `ketch plugins`)"
)


def run(kernel: Kernel, args: argparse.Namespace) -> int:
    """One action; a file that cannot be read or written is one line (``ketch: ...``)
    and exit 1, never a traceback."""
    from ketch.api import KetchError
    from ketch_trust_kit import TrustStoreError

    try:
        return _run(kernel, args)
    except TrustStoreError as exc:
        raise KetchError(str(exc)) from None
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise KetchError(f"{where}{exc.strerror or exc}") from None


def _run(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch_claude_plugins import commands

    action = args.plugin_action
    if action == "marketplace":
        sub = {"rm": "remove"}.get(args.marketplace_action, args.marketplace_action)
        return getattr(commands, f"marketplace_{sub}")(kernel, args)
    action = {"remove": "uninstall", "rm": "uninstall", "list": "show_list"}.get(action, action)
    return int(getattr(commands, action)(kernel, args))


def confirm(question: str, yes: bool) -> bool | None:
    """True with ``--yes`` or a "y" at the terminal; False for another answer; None
    when nobody can be asked (not a terminal, no ``--yes``)."""
    if yes:
        return True
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return None
    try:
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False
