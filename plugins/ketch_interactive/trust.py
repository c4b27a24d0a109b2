"""The first-run trust offer.

A workspace's hooks, MCP servers, allow rules, ``!`cmd``` lines and git programs stay
off until the person trusts them, item by item (the trust plugin's ``/trust``). When
the shell starts in a workspace with items nobody trusted yet, it runs the command
that declares a start offer (``ketch_frontend_kit.offers``: ``/trust --offer``), which
lists every one of them (what it runs or grants) and asks; with nothing to trust it
says nothing. Without the trust plugin the shell only says where
the notice came from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, Layer
    from ketch_interactive.shell import Shell


def ignored_workspace_layer(kernel: Kernel) -> Layer | None:
    """The workspace layer when some of its values were held back (not trusted)."""
    layer = next((item for item in kernel.loaded_settings.layers if item.name == "workspace"), None)
    if layer is None or not layer.ignored:
        return None
    return layer


def offer_replaces(layer: Layer | None) -> list[str]:
    """How the notices the offer replaces begin: the settings loader's about this layer,
    and the trust kit's summary of the items never trusted."""
    from ketch_trust_kit import SUMMARY_PREFIX

    return [SUMMARY_PREFIX] + ([f"{layer.source}: ignored "] if layer is not None else [])


def has_offer(shell: Shell) -> bool:
    """Whether a slash command offers something at start (``START_OFFER``: the trust
    plugin's review of what this workspace would run)."""
    from ketch_frontend_kit.offers import start_offers

    return bool(start_offers(shell.kernel.commands.values()))


async def offer_trust(shell: Shell) -> bool:
    """Run each start offer a command declares (the trust plugin's); False when none does."""
    from ketch_frontend_kit.offers import start_offers
    from ketch_interactive.slash import run_plugin_command

    offers = start_offers(shell.kernel.commands.values())
    for command, args in offers:
        await run_plugin_command(shell, command, " ".join(args))
    return bool(offers)
