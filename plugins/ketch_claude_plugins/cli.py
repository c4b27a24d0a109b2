"""``ketch plugin ...``: Claude Code plugins and their marketplaces.

Import-light at the top: ``configure`` runs whenever the command line is built.
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


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="plugin_action", metavar="ACTION", required=True)
    market = sub.add_parser("marketplace", help="add, list, update or remove a marketplace")
    msub = market.add_subparsers(dest="marketplace_action", metavar="ACTION", required=True)
    add = msub.add_parser(
        "add", help="add a marketplace: a directory, a git URL (#ref), or GitHub owner/repo (@ref)"
    )
    add.add_argument("source")
    listing = msub.add_parser("list", help="the marketplaces added")
    listing.add_argument("--json", action="store_true")
    remove = msub.add_parser(
        "remove", aliases=["rm"], help="remove a marketplace and uninstall its plugins"
    )
    remove.add_argument("name")
    update = msub.add_parser(
        "update", help="fetch a marketplace's catalog again (all without NAME)"
    )
    update.add_argument("name", nargs="?")

    install = sub.add_parser(
        "install", help="install NAME[@MARKETPLACE]: show what it runs, then pin it"
    )
    install.add_argument("plugin")
    install.add_argument(
        "--scope",
        choices=("user", "project"),
        default="user",
        help="user: on everywhere (default); project: on in this workspace, recorded in its .ketch/config.toml",
    )
    install.add_argument(
        "--yes", "-y", action="store_true", help="install without asking (after reading the list)"
    )
    plugins = sub.add_parser(
        "list", help="the plugins installed (--available: every marketplace's)"
    )
    plugins.add_argument("--available", action="store_true")
    plugins.add_argument("--json", action="store_true")
    for name, text in (("enable", "turn a plugin on"), ("disable", "turn a plugin off")):
        one = sub.add_parser(name, help=f"{text} (--scope project: in this workspace only)")
        one.add_argument("plugin")
        one.add_argument("--scope", choices=("user", "project"), default="user")
    upgrade = sub.add_parser(
        "update", help="fetch a plugin again from its marketplace: show what changed, then pin it"
    )
    upgrade.add_argument("plugin")
    upgrade.add_argument("--yes", "-y", action="store_true")
    trust = sub.add_parser(
        "trust", help="show what an installed plugin runs and pin it again (after a change)"
    )
    trust.add_argument("plugin")
    trust.add_argument("--yes", "-y", action="store_true")
    gone = sub.add_parser(
        "uninstall",
        aliases=["remove", "rm"],
        help="remove a plugin: its files, pins and config entries",
    )
    gone.add_argument("plugin")


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
