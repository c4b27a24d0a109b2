"""A session's egress: its proxy (started by the first command that needs it) and its rules."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ketch.stash import StashKey
from ketch_sandbox.egress import Channel, Egress

if TYPE_CHECKING:  # pragma: no cover
    from ketch.session import Session
    from ketch.tools import ToolContext
    from ketch_net_kit.rules import NetworkRules

EGRESS = StashKey[Egress]()


def workspace_widens(session: Session) -> bool:
    """Whether the workspace's config may widen the network rules. Not yet: that waits
    for trust by content (issue 23); until then a workspace only narrows them."""
    return False


def rules_for(session: Session) -> NetworkRules:
    """The ``[sandbox.network]`` rules in force for ``session`` now (its profile)."""
    from ketch_net_kit.config import compose

    return compose(
        session.kernel.layers, session.profile, workspace_widens=workspace_widens(session)
    )


def open_channel(
    session: Session | None, context: ToolContext
) -> tuple[Channel, list[str], list[str]] | None:
    """A proxy socket for one command: (the channel, the argv prefix, the bwrap mounts).
    None when the call belongs to no live session (the command then has no network)."""
    if session is None:
        return None
    from ketch_net_kit.config import inject_rules
    from ketch_sandbox.network import bwrap_args, forwarded

    egress = session.stash.get(EGRESS)
    if egress is None:
        egress = session.stash[EGRESS] = Egress(session.id)
    try:
        owner = asyncio.get_running_loop()
    except RuntimeError:
        owner = None
    channel = egress.channel(
        rules_for(session), context, owner, inject_rules(session.kernel.layers)
    )
    assert egress.resolv is not None
    return channel, forwarded([]), bwrap_args(channel.path, egress.resolv)
