"""Claude Code plugins and marketplaces (docs/claude-plugins.md).

``ketch plugin marketplace add PATH|GIT-URL`` reads a marketplace's
``.claude-plugin/marketplace.json`` (a directory in place; a git repository cloned by
``ketch_git_kit``, which runs nothing the repository configures). ``ketch plugin
install NAME@MARKETPLACE`` copies the plugin into the user data dir, shows every part
that runs something — each hook command, each MCP server's command line, each
``!`cmd``` line, each skill with scripts, each agent definition — and pins their
digests in a pin file beside the plugin (the trust kit's format and rules). Then the
plugin's commands (``/plugin:command``), skills and agents reach the commands, skills
and agents plugins through the hooks they declare (``commands_folders``,
``skills_folders``, ``agents_folders``), its hooks the hooks plugin
(``hooks_extra``), its MCP servers the MCP plugin (``mcp_extra_servers``, as
``plugin_NAME_SERVER``); each of them checks an item against the plugin's pins right
before it runs it, so a changed script is held back until ``ketch plugin trust``.

This plugin declares ``claude_plugins_folder_items`` (the readers list their items of
a plugin's folder, to be shown at install) and ``claude_plugins_removed`` (forget a
plugin that was uninstalled). ``[claude_plugins]`` in a workspace's config turns
installed plugins on (a trust item each) or off there. ketch's own Python plugins are
another thing: ``ketch plugins`` lists those.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import Command, hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, ProposedCall, Session, Vote


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_claude_plugins import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def ketch_register_settings(register: Callable[[Any], None]) -> None:
    from ketch_claude_plugins.settings import SECTION

    register(SECTION)


def _run(kernel: Any, args: Any) -> int:
    from ketch_claude_plugins.cli import run

    return run(kernel, args)


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    register(
        Command(
            name="plugin",
            help=(
                "Claude Code plugins: marketplaces, install, list, enable, disable, update, "
                "trust, uninstall (ketch's own Python plugins: ketch plugins)"
            ),
            cli=True,
            configure=_configure,
            run=_run,
        )
    )


@hookimpl
def ketch_policy_vote(call: ProposedCall) -> Vote | None:
    """The model running ``ketch plugin ...`` asks, in every profile, and no hook's
    allow answers for you: installing, updating, trusting or enabling a plugin pins
    what runs on your machine."""
    from ketch_policy_kit.commands import runs_ketch

    if not runs_ketch(call, "plugin"):
        return None
    from ketch.api import Vote

    return Vote(
        decision="ask",
        reason="it runs `ketch plugin`: only you install or trust what a plugin runs (type it yourself)",
        hard=True,
    )


@hookimpl(optionalhook=True)
def trust_setting_items(kernel: Kernel, key: tuple[str, ...], value: Any) -> list[Any] | None:
    if key != ("claude_plugins", "enabled"):
        return None
    from ketch_claude_plugins.workspace import setting_items

    return setting_items(kernel, value)


def _any(kernel: Kernel) -> bool:
    """Whether any plugin is installed or named in the config (else nothing more is
    imported: these hooks run at every start, before the command line is parsed)."""
    from ketch_claude_plugins.paths import anything_installed

    return anything_installed() or any(
        isinstance(layer.data, dict) and "claude_plugins" in layer.data for layer in kernel.layers
    )


@hookimpl(optionalhook=True)
def commands_folders(kernel: Kernel) -> list[Any]:
    if not _any(kernel):
        return []
    from ketch_claude_plugins.active import folders

    return folders(kernel, "commands")


@hookimpl(optionalhook=True)
def skills_folders(kernel: Kernel) -> list[Any]:
    if not _any(kernel):
        return []
    from ketch_claude_plugins.active import folders

    return folders(kernel, "skills")


@hookimpl(optionalhook=True)
def agents_folders(kernel: Kernel) -> list[Any]:
    if not _any(kernel):
        return []
    from ketch_claude_plugins.active import folders

    return folders(kernel, "agents")


@hookimpl(optionalhook=True)
def hooks_extra(session: Session, event: str) -> list[dict[str, Any]]:
    if not _any(session.kernel):
        return []
    from ketch_claude_plugins.active import hooks_now

    return hooks_now(session, event)


@hookimpl(optionalhook=True)
def mcp_extra_servers(kernel: Kernel) -> dict[str, dict[str, Any]]:
    if not _any(kernel):
        return {}
    from ketch_claude_plugins.active import servers_now

    return servers_now(kernel)


# ``ketch plugin``'s arguments: here, as the command line is built at every start.
def _configure(parser: Any) -> None:
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
