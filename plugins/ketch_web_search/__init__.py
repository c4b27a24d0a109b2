"""ketch_web_search: the ``web_search`` tool (a query to a short list of title, URL, snippet).

Backends, chosen with ``[tools.web_search] backend = ...``: DuckDuckGo's HTML endpoint
(the keyless default), a SearXNG instance's JSON API (``url`` required), or the Brave
Search API (key from ``BRAVE_API_KEY`` or ``ketch auth set brave``). Each search is a
NETWORK access to the backend's host, decided by the policy like ``web_fetch``; what
comes back is untrusted web content: invisible characters stripped, sizes capped, and
marked as such for the model. See docs/tools.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ketch.api import hookimpl, provides


@hookimpl
@provides("web_search")
def ketch_register_tools(register: Callable[[Any], None], kernel: Any) -> None:
    from ketch_web_search.tool import WebSearch

    def credential(provider: str, kind: str) -> str | None:
        return kernel.hooks.first("ketch_get_credential", provider=provider, kind=kind)  # type: ignore[no-any-return]

    register(WebSearch(credential))
