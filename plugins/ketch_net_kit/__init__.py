"""ketch_net_kit: what the sandbox's egress proxy and ``web_fetch`` share about the network.

A library that registers nothing (any plugin can be disabled alone):

* :mod:`~ketch_net_kit.hosts`: one canonical form for a host name or address (case,
  trailing dot, IDNA, no NUL or control characters, IPv4 literals in every spelling
  the C library and browsers accept: ``2130706433``, ``0x7f.1``, ``0177.0.0.1``);
* :mod:`~ketch_net_kit.addresses`: which addresses are local (loopback, private,
  link-local, cloud metadata...), IPv4 hidden inside IPv6 included;
* :mod:`~ketch_net_kit.rules`: the domain rules (``[sandbox.network] allow/deny``),
  matched on label boundaries, and composed from the config layers (a workspace only
  narrows);
* :mod:`~ketch_net_kit.resolve`: a name resolved once, every address checked, and
  only checked addresses connected to (no second lookup: DNS rebinding);
* :mod:`~ketch_net_kit.pinned`: an httpx transport that connects only to checked
  addresses.
"""
