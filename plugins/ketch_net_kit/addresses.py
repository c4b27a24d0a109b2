"""Which addresses are *local*: this machine, its networks, and the cloud's metadata service.

A request to ``127.0.0.1``, ``10.0.0.5``, ``169.254.169.254`` or ``[fd00:ec2::254]``
reaches something that trusts the machine it comes from (an admin page, a database,
cloud credentials). :func:`local_kind` names the kind of such an address, or None for
an address on the internet. IPv4 hidden inside IPv6 (``::ffff:127.0.0.1``,
``::127.0.0.1``, NAT64 ``64:ff9b::7f00:1``, 6to4 ``2002:7f00:1::``, Teredo) is
judged as the IPv4 address it carries.

Not local: the documentation ranges (``192.0.2.0/24``, ``198.51.100.0/24``,
``203.0.113.0/24``, ``2001:db8::/32``), which Python's ``is_private`` counts as
private but some networks use for real services (a package index behind a
transparent proxy, for one).
"""

from __future__ import annotations

import ipaddress

from ketch_net_kit.hosts import IPAddress

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# Most specific first: the first match names the kind.
LOCAL_V4: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_V4("169.254.169.254/32"), "metadata"),  # AWS, GCP, Azure, OpenStack, DigitalOcean...
    (_V4("169.254.170.2/32"), "metadata"),  # ECS task credentials
    (_V4("100.100.100.200/32"), "metadata"),  # Alibaba Cloud
    (_V4("192.0.0.192/32"), "metadata"),  # Oracle Cloud
    (_V4("0.0.0.0/8"), "unspecified"),  # "this host": 0.0.0.0 reaches local services
    (_V4("127.0.0.0/8"), "loopback"),
    (_V4("10.0.0.0/8"), "private"),
    (_V4("172.16.0.0/12"), "private"),
    (_V4("192.168.0.0/16"), "private"),
    (_V4("100.64.0.0/10"), "private"),  # carrier-grade NAT, also Tailscale
    (_V4("198.18.0.0/15"), "private"),  # benchmarking, used inside networks
    (_V4("192.0.0.0/24"), "reserved"),
    (_V4("169.254.0.0/16"), "link-local"),
    (_V4("224.0.0.0/4"), "multicast"),
    (_V4("240.0.0.0/4"), "reserved"),  # and 255.255.255.255
)
LOCAL_V6: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_V6("fd00:ec2::254/128"), "metadata"),  # AWS (IPv6)
    (_V6("::/128"), "unspecified"),
    (_V6("::1/128"), "loopback"),
    (_V6("fe80::/10"), "link-local"),
    (_V6("fc00::/7"), "private"),
    (_V6("fec0::/10"), "private"),  # site-local (deprecated, still routed inside some networks)
    (_V6("ff00::/8"), "multicast"),
    (_V6("100::/64"), "reserved"),  # discard
)
KIND_TEXT = {
    "metadata": "a cloud metadata service (instance credentials live there)",
    "unspecified": "the unspecified address (it reaches this machine)",
    "loopback": "this machine (loopback)",
    "private": "a private network address",
    "link-local": "a link-local address",
    "multicast": "a multicast address",
    "reserved": "a reserved address",
}


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries, in the forms that reach it."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    value = int(ip)
    if value >> 32 == 0 and value > 1:  # IPv4-compatible ::a.b.c.d (deprecated, still parsed)
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if value >> 32 == 0xFFFF0000:  # SIIT ::ffff:0:a.b.c.d
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if ip in _V6("64:ff9b::/96"):  # NAT64, well-known prefix
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if ip in _V6("64:ff9b:1::/48"):  # NAT64, local-use prefix
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]  # the client's address
    return None


def local_kind(ip: IPAddress) -> str | None:
    """``"loopback"``, ``"private"``, ``"link-local"``, ``"metadata"``, ... or None."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = embedded_ipv4(ip)
        if inner is not None:
            return local_kind(inner)
        for net6, kind in LOCAL_V6:
            if ip in net6:
                return kind
        return None
    for net4, kind in LOCAL_V4:
        if ip in net4:
            return kind
    return None


def describe(ip: IPAddress) -> str:
    kind = local_kind(ip)
    return f"{ip} ({KIND_TEXT[kind]})" if kind else str(ip)
