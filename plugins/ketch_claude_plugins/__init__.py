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


def _configure(parser: Any) -> None:
    from ketch_claude_plugins.cli import configure

    configure(parser)


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
