"""What a policy vote says about a connection to a local address (web_fetch and the sandbox)."""

from __future__ import annotations

from typing import Any

from ketch_net_kit.addresses import KIND_TEXT

LOCAL = "local"  # Access.detail key: the kind of local address (addresses.local_kind)
ADDRESS = "address"  # Access.detail key: the address itself


def local_reason(access: Any) -> str | None:
    """ "connects to 127.0.0.1, this machine (loopback) (for localhost)", or None when the
    access goes to no local address."""
    detail = getattr(access, "detail", {}) or {}
    kind = detail.get(LOCAL)
    if not kind:
        return None
    address = detail.get(ADDRESS) or detail.get("host") or "?"
    host = detail.get("host")
    named = f" (for {host})" if host and host != address else ""
    return f"connects to {address}, {KIND_TEXT.get(str(kind), 'a local address')}{named}"
