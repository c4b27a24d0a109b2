"""ketch_web: the ``web_fetch`` tool (http/https GET, size and time caps, HTML as
Markdown, redirects to other hosts re-checked through the policy). See docs/tools.md.

``web_fetch`` obeys the network's domain rules (``[sandbox.network]``, the same rules
and canonical host names the sandbox's egress proxy uses, from ``ketch_net_kit``): a
``deny`` entry refuses the host, an ``allow`` entry lets it be fetched without asking
(offered to the policy as a ``web(HOST)`` rule). A connection to a local address
(loopback, private, link-local, cloud metadata) asks in every profile -- checked after
resolution, on every connection and redirect -- unless a ``local`` entry names it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl, provides

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import PermissionSnapshot, ProposedCall, Session, Vote


@hookimpl
@provides("web_fetch")
def ketch_register_tools(register: Callable[[Any], None]) -> None:
    from ketch_web.tool import WebFetch

    register(WebFetch())


@hookimpl
def ketch_permission_rules(session: Session) -> dict[str, list[str]] | None:
    from ketch_web.rules import allow_rules

    allowed = allow_rules(session)
    return {"allow": allowed} if allowed else None


@hookimpl
def ketch_policy_vote(
    call: ProposedCall, snapshot: PermissionSnapshot, session: Session
) -> Vote | None:
    if call.tool != "web_fetch":
        return None
    from ketch_web.rules import vote

    return vote(call, session)
