"""Domain rules: which hosts the network may reach, matched on label boundaries.

A pattern is one of

* ``example.com``: exactly that host (``www.example.com`` is another host);
* ``*.example.com``: every host *under* it (``a.example.com``, ``a.b.example.com``),
  not ``example.com`` itself -- the same reading as the ``web(...)`` permission rule;
* an address, ``10.1.2.3`` or ``[::1]``, or a network, ``10.0.0.0/8``; an address
  matches however it is spelled (``0x0a.1.2.3``, ``::ffff:10.1.2.3``);
* ``*``: every host (the only way to say "everything": an empty list allows nothing);

each optionally with ``:PORT``. Patterns are canonicalised like hosts
(:func:`ketch_net_kit.hosts.canonical_host`), so ``Example.COM.`` is ``example.com``,
and matching compares labels, never string prefixes or suffixes:
``example.com.evil.net`` is not under ``example.com``.

A :class:`NetworkRules` decides one connection: a **deny** pattern refuses it, a
**read_only** pattern limits it to plain-HTTP GET/HEAD (a tunnel cannot be read, so
it is refused), an **allow** pattern admits it, and anything else is for the person
to decide (``ask``). **local** patterns are the hosts that may be reached at local
addresses (loopback, private, link-local: see :mod:`ketch_net_kit.addresses`).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Literal

from ketch_net_kit.addresses import embedded_ipv4
from ketch_net_kit.hosts import BadHost, Host, IPAddress, canonical_host, split_authority

MAX_PATTERN = 300
READ_ONLY_METHODS = frozenset({"GET", "HEAD"})


class BadPattern(ValueError):
    pass


@dataclass(frozen=True)
class Pattern:
    text: str  # as written
    kind: Literal["any", "name", "under", "address"]
    name: str = ""  # "name": the host; "under": the domain below which hosts match
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
    port: int | None = None

    def matches(self, host: Host, port: int | None = None) -> bool:
        if self.port is not None and port != self.port:
            return False
        if self.kind == "any":
            return True
        if self.kind == "address":
            return host.ip is not None and any(ip in self.network for ip in _spellings(host.ip))  # type: ignore[operator]
        if host.ip is not None:
            return False
        if self.kind == "name":
            return host.name == self.name
        return host.name.endswith("." + self.name)

    def covers(self, other: Pattern) -> bool:
        """Every host ``other`` matches, this matches too (for narrowing)."""
        if self.port is not None and other.port != self.port:
            return False
        if self.kind == "any":
            return True
        if other.kind == "any":
            return False
        if self.kind == "address":
            return (
                other.kind == "address"
                and other.network is not None
                and self.network is not None
                and other.network.version == self.network.version
                and other.network.subnet_of(self.network)  # type: ignore[arg-type]
            )
        if other.kind == "address":
            return False
        if self.kind == "name":
            return other.kind == "name" and other.name == self.name
        return other.name.endswith("." + self.name) or (
            other.kind == "under" and other.name == self.name
        )

    def __str__(self) -> str:
        return self.text


def _spellings(ip: IPAddress) -> list[IPAddress]:
    if isinstance(ip, ipaddress.IPv6Address):
        inner = embedded_ipv4(ip)
        return [ip, inner] if inner is not None else [ip]
    return [ip]


def parse_pattern(text: object) -> Pattern:
    """One pattern; :class:`BadPattern` with a one-line reason."""
    if not isinstance(text, str):
        raise BadPattern(f"a host pattern is text like 'example.com', not {type(text).__name__}")
    raw = text.strip()
    if not raw:
        raise BadPattern("an empty host pattern")
    if len(raw) > MAX_PATTERN:
        raise BadPattern(
            f"'{raw[:40]}...': a host pattern may have at most {MAX_PATTERN} characters"
        )
    if "://" in raw:
        raise BadPattern(f"'{raw}': name a host (example.com), not a URL")
    if raw == "*":
        return Pattern(raw, "any")
    body, port = _port(raw)
    if "/" in body:
        try:
            network = ipaddress.ip_network(body.strip("[]"), strict=False)
        except ValueError:
            raise BadPattern(
                f"'{raw}' is neither a host (example.com) nor a network (10.0.0.0/8)"
            ) from None
        return Pattern(raw, "address", network=network, port=port)
    under = body.startswith("*.")
    if under:
        body = body[2:]
    if "*" in body:
        raise BadPattern(f"'{raw}': only a leading '*.' is a wildcard (*.example.com)")
    try:
        host = canonical_host(body)
    except BadHost as exc:
        raise BadPattern(f"'{raw}': {exc}") from None
    if host.ip is not None:
        if under:
            raise BadPattern(f"'{raw}': '*.' goes with a domain name, not an address")
        return Pattern(raw, "address", network=ipaddress.ip_network(host.ip), port=port)
    return Pattern(raw, "under" if under else "name", name=host.name, port=port)


def _port(raw: str) -> tuple[str, int | None]:
    """Split an optional ``:PORT`` (IPv6 must be in brackets to carry one)."""
    if raw.startswith("[") and "]" in raw:
        end = raw.index("]")
        rest = raw[end + 1 :]
        if not rest:
            return raw[: end + 1], None
        if not rest.startswith(":"):
            raise BadPattern(f"'{raw}' is not [address]:port")
        return raw[: end + 1], _port_number(raw, rest[1:])
    if raw.count(":") == 1:
        body, _, port = raw.partition(":")
        return body, _port_number(raw, port)
    return raw, None


def _port_number(raw: str, text: str) -> int:
    if not text.isdigit() or len(text) > 5 or not 0 < int(text) < 65536:
        raise BadPattern(f"'{raw}': '{text}' is not a port")
    return int(text)


@dataclass(frozen=True)
class Decision:
    verdict: Literal["allow", "deny", "ask"]
    reason: str  # one line: why, and which rule (empty for ask)
    rule: str = ""  # the rule that decided, as written ("allow 'pypi.org'")


@dataclass(frozen=True)
class NetworkRules:
    allow: tuple[Pattern, ...] = ()
    deny: tuple[Pattern, ...] = ()
    read_only: tuple[Pattern, ...] = ()
    local: tuple[Pattern, ...] = ()
    errors: tuple[str, ...] = ()
    notices: tuple[str, ...] = field(default=(), compare=False)

    def decide(
        self, host: Host, port: int, *, method: str | None = None, tunnel: bool = True
    ) -> Decision:
        """``method``: the plain-HTTP request's method (None for a tunnel: CONNECT, SOCKS)."""
        where = f"{host.authority}:{port}"
        for pattern in self.deny:
            if pattern.matches(host, port):
                return Decision(
                    "deny",
                    f"{where} is denied by [sandbox.network] deny '{pattern}'",
                    f"deny '{pattern}'",
                )
        for pattern in self.read_only:
            if not pattern.matches(host, port):
                continue
            if tunnel or method is None:
                return Decision(
                    "deny",
                    f"{where} is read-only ([sandbox.network] read_only '{pattern}'): only plain-HTTP GET and HEAD can be checked, not a tunnel",
                    f"read_only '{pattern}'",
                )
            if method.upper() not in READ_ONLY_METHODS:
                return Decision(
                    "deny",
                    f"{method} to {where} is refused: [sandbox.network] read_only '{pattern}' allows GET and HEAD only",
                    f"read_only '{pattern}'",
                )
        for pattern in self.allow:
            if pattern.matches(host, port):
                return Decision(
                    "allow", f"allowed by [sandbox.network] allow '{pattern}'", f"allow '{pattern}'"
                )
        return Decision("ask", "")

    def local_allowed(self, host: Host, ip: IPAddress, port: int) -> str | None:
        """The ``local`` pattern that lets ``host`` be reached at the local address ``ip``."""
        address = Host(str(ip), ip)
        for pattern in self.local:
            if (
                pattern.matches(host, port)
                or pattern.kind == "address"
                and pattern.matches(address, port)
            ):
                return str(pattern)
        return None


def would_allow(host: Host, port: int | None = None) -> str:
    """The rule a person would add to allow ``host`` (for refusal messages)."""
    return f'[sandbox.network] allow = ["{host.authority}"]'


def parse_patterns(values: object, key: str, errors: list[str]) -> tuple[Pattern, ...]:
    """Parse a list from config; a bad entry becomes an error line (``key``: where)."""
    if values is None:
        return ()
    if not isinstance(values, list):
        errors.append(f"{key} must be a list of host patterns")
        return ()
    found: list[Pattern] = []
    for value in values:
        try:
            found.append(parse_pattern(value))
        except BadPattern as exc:
            errors.append(f"{key}: {exc}")
    return tuple(found)


__all__ = [
    "BadPattern",
    "Decision",
    "NetworkRules",
    "Pattern",
    "parse_pattern",
    "parse_patterns",
    "split_authority",
    "would_allow",
]
