"""web_fetch under the network's domain rules (``[sandbox.network]``, via ketch_net_kit)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch.api import Effect

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ProposedCall, Session, Vote
    from ketch_net_kit.rules import NetworkRules


def rules_of(session: Session) -> NetworkRules:
    from ketch_net_kit.config import compose

    # A workspace only narrows the rules (widening waits for trust by content, issue 23).
    return compose(session.kernel.layers, session.profile)


def allow_rules(session: Session) -> list[str]:
    """The allow entries as ``web(...)`` permission rules, where that syntax says the
    same thing (names, ``*.`` domains, IPv4 addresses, ports); the rest stay asked."""
    found = []
    for pattern in rules_of(session).allow:
        if pattern.kind == "any":
            found.append("web")
        elif pattern.kind in ("name", "under"):
            name = pattern.name if pattern.kind == "name" else f"*.{pattern.name}"
            found.append(f"web({name}{f':{pattern.port}' if pattern.port else ''})")
        elif (
            pattern.network is not None
            and pattern.network.version == 4
            and pattern.network.num_addresses == 1
        ):
            port = f":{pattern.port}" if pattern.port else ""
            found.append(f"web({pattern.network.network_address}{port})")
    return found


def vote(call: ProposedCall, session: Session) -> Vote | None:
    """Deny what a deny entry names; ask (every profile) for a local address no
    ``local`` entry names."""
    from ketch.api import Vote
    from ketch_net_kit.hosts import BadHost, canonical_host
    from ketch_net_kit.votes import local_reason

    rules = rules_of(session)
    asks: list[str] = []
    for access in call.accesses:
        if access.effect != Effect.NETWORK:
            continue
        try:
            host = canonical_host(str(access.detail.get("host") or ""))
        except BadHost as exc:
            return Vote(decision="deny", reason=str(exc), plugin="web", origin="analysis")
        port = access.detail.get("port") or (443 if access.detail.get("scheme") == "https" else 80)
        decision = rules.decide(host, int(port), method="GET", tunnel=False)
        if decision.verdict == "deny":
            return Vote(
                decision="deny",
                reason=decision.reason,
                plugin="web",
                origin="rule",
                rules=(decision.rule,) if decision.rule else (),
            )
        local = local_reason(access)
        if local is None:
            continue
        address = str(access.detail.get("address") or "")
        import ipaddress

        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            asks.append(local)
            continue
        if rules.local_allowed(host, ip, int(port)) is None:
            asks.append(local)
    if asks:
        return Vote(
            decision="ask",
            reason="; ".join(asks) + " (a local address: asked in every profile)",
            plugin="web",
            scope=None,
            origin="network",
        )
    return None
