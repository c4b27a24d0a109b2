"""A name resolved once, every address judged, and only judged addresses used.

Checking a name and then letting the connecting code resolve it again opens DNS
rebinding: the first answer is public, the second ``127.0.0.1``. Here the caller gets
the addresses themselves and connects to them, never to the name.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass

from ketch_net_kit.addresses import local_kind
from ketch_net_kit.hosts import Host, IPAddress


class Unresolved(OSError):
    """The name has no address (or the lookup failed)."""


@dataclass(frozen=True)
class Address:
    ip: IPAddress
    local: str | None  # the kind of local address (addresses.local_kind), None: public


async def resolve(host: Host, port: int) -> list[Address]:
    """Every address of ``host`` (an address literal is its own), with its kind."""
    if host.ip is not None:
        return [Address(host.ip, local_kind(host.ip))]
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(
            host.name, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )
    except (OSError, UnicodeError) as exc:
        raise Unresolved(f"{host.name} could not be resolved ({exc})") from None
    found: list[Address] = []
    for family, _type, _proto, _name, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        text = str(sockaddr[0]).split("%", 1)[0]
        try:
            ip = ipaddress.ip_address(text)
        except ValueError:
            continue
        if all(a.ip != ip for a in found):
            found.append(Address(ip, local_kind(ip)))
    if not found:
        raise Unresolved(f"{host.name} has no address")
    return found
