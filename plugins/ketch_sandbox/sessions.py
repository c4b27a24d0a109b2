"""A session's egress: its proxy (started by the first command that needs it) and its rules."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ketch.api import StashKey

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Access, PermissionSnapshot, ProposedCall, Session, ToolContext
    from ketch_net_kit.rules import NetworkRules
    from ketch_sandbox.egress import Channel, Egress

# The proxy and its HTTP parser (egress, proxy: h11) load with the first command that
# needs the network, not with the session's start (which reads only the rules).
EGRESS: StashKey[Egress] = StashKey()


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
    session: Session | None, context: ToolContext, bwrap: str = "bwrap"
) -> Channel | None:
    """A way out for one command (its :meth:`Channel.launcher`, :meth:`Channel.prefix`
    and :meth:`Channel.bwrap_args` go on its command line). None when the call belongs
    to no live session (the command then has no network)."""
    if session is None:
        return None
    from ketch_net_kit.config import inject_rules
    from ketch_sandbox.egress import Egress

    egress = session.stash.get(EGRESS)
    if egress is None:
        egress = session.stash[EGRESS] = Egress(session.id, bwrap)
    try:
        owner = asyncio.get_running_loop()
    except RuntimeError:
        owner = None
    channel = egress.channel(
        rules_for(session), context, owner, inject_rules(session.kernel.layers)
    )
    if channel.path is not None and egress.fallback and not egress.fallback_said:
        egress.fallback_said = True
        from ketch.api import NoticeEvent

        session.kernel.emit(
            session,
            NoticeEvent(
                level="info",
                message=f"sandbox: commands with the network start under a forwarder, a few tens of milliseconds later ({egress.fallback})",
            ),
        )
    return channel


def unlisted_host(
    call: ProposedCall, access: Access, snapshot: PermissionSnapshot
) -> tuple[str, str] | None:
    """(reason, scope) when no ``web(HOST)`` rule or approval names the host a sandboxed
    command asked the proxy for; None when one does. Only host rules count: an allow
    rule for every ``shell`` call says nothing about where its commands may connect."""
    from ketch_policy_kit.rules import compile_scopes, parse_host, rules_of

    url = access.target
    host = str(access.detail.get("host") or "")
    allowing = rules_of(snapshot.rules).allow + compile_scopes(snapshot.approvals)
    if any(
        rule.kind != "tool" or rule.scoped
        for rule in allowing
        if rule.matches_url(call.tool, url, host)
    ):
        return None
    parsed = parse_host(url)
    name, port = parsed if parsed is not None else (host, access.detail.get("port"))
    where = f"{name}:{port}" if port else name
    return (
        f"a sandboxed command connects to {where}, which no [sandbox.network] rule allows",
        f"web({where})",
    )
