"""The three search backends: how each asks, and how its answer becomes results.

* DuckDuckGo: ``GET {url}/html/?q=...`` (html.duckduckgo.com), results parsed from the
  page (``div.result``: ``a.result__a``, ``.result__snippet``; ads skipped; its
  ``/l/?uddg=`` redirect links unwrapped to the real URL);
* SearXNG: ``GET {url}/search?q=...&format=json`` → ``results[].title/url/content``
  (the instance must allow the ``json`` format);
* Brave: ``GET {url}/res/v1/web/search?q=...&count=N`` with ``X-Subscription-Token`` →
  ``web.results[].title/url/description`` (descriptions carry ``<strong>`` marks).
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

DEFAULT_URLS = {
    "duckduckgo": "https://html.duckduckgo.com",
    "brave": "https://api.search.brave.com",
    "searxng": "",
}
BRAVE_KEY_VARS = ("BRAVE_API_KEY", "BRAVE_SEARCH_API_KEY")


class SearchFailed(Exception):
    """A backend answered with something other than results (say what to do)."""


@dataclass
class Result:
    title: str
    url: str
    snippet: str


@dataclass
class Query:
    """One request a backend sends: a GET of ``url`` with ``headers``."""

    url: str
    headers: dict[str, str]


def search_url(backend: str, base: str, query: str, count: int) -> str:
    """The URL one search GETs (never holding a key: the Brave key goes in a header)."""
    base = base.rstrip("/")
    if backend == "duckduckgo":
        return f"{base}/html/?{urlencode({'q': query})}"
    if backend == "searxng":
        return f"{base}/search?{urlencode({'q': query, 'format': 'json', 'pageno': 1})}"
    if backend == "brave":
        return f"{base}/res/v1/web/search?{urlencode({'q': query, 'count': count})}"
    raise SearchFailed(f"unknown backend {backend!r}: use duckduckgo, searxng or brave")


def build(backend: str, base: str, query: str, count: int, key: str | None) -> Query:
    url = search_url(backend, base, query, count)
    if backend == "brave":
        if not key:
            raise SearchFailed(
                f"the brave backend needs an API key: set {BRAVE_KEY_VARS[0]} or run `ketch auth set brave`"
            )
        return Query(url, {"Accept": "application/json", "X-Subscription-Token": key})
    return Query(url, {"Accept": "text/html" if backend == "duckduckgo" else "application/json"})


def parse(backend: str, body: bytes, base: str) -> list[Result]:
    if backend == "duckduckgo":
        return _duckduckgo(body, base)
    data = _json(body, backend)
    if backend == "searxng":
        items = data.get("results") if isinstance(data, dict) else None
        return [
            _result(i.get("title"), i.get("url"), i.get("content"))
            for i in items or []
            if isinstance(i, dict)
        ]
    web = data.get("web") if isinstance(data, dict) else None
    items = web.get("results") if isinstance(web, dict) else None
    return [
        _result(i.get("title"), i.get("url"), i.get("description"))
        for i in items or []
        if isinstance(i, dict)
    ]


def _json(body: bytes, backend: str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        hint = (
            " (is the json format enabled in the instance's search.formats?)"
            if backend == "searxng"
            else ""
        )
        raise SearchFailed(f"the {backend} backend did not answer with JSON{hint}") from None


_TAG = re.compile(r"<[^>]+>")


def plain(value: Any) -> str:
    """Text without markup or entities, whitespace collapsed."""
    if not isinstance(value, str):
        return ""
    return " ".join(html.unescape(_TAG.sub("", value)).split())


def _result(title: Any, url: Any, snippet: Any) -> Result:
    return Result(plain(title), url.strip() if isinstance(url, str) else "", plain(snippet))


def _duckduckgo(body: bytes, base: str) -> list[Result]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(body, "html.parser")
    results: list[Result] = []
    for block in soup.select("div.result"):
        classes: list[str] = list(block.get("class") or [])
        if "result--ad" in classes:
            continue
        link = block.select_one("a.result__a")
        if link is None:
            continue
        snippet = block.select_one(".result__snippet")
        href = str(link.get("href") or "")
        results.append(
            Result(
                plain(link.get_text(" ")),
                unwrap(href, base),
                plain(snippet.get_text(" ") if snippet else ""),
            )
        )
    if not results and (b"anomaly" in body.lower() or b"captcha" in body.lower()):
        raise SearchFailed(
            "DuckDuckGo asked for a bot check instead of answering; try again later, or use the searxng or brave backend"
        )
    return results


def unwrap(href: str, base: str) -> str:
    """The real URL of a DuckDuckGo ``/l/?uddg=...`` redirect link; other links as they are."""
    absolute = urljoin(base + "/", href)
    parts = urlsplit(absolute)
    if parts.path.startswith("/l/"):
        target = parse_qs(parts.query).get("uddg")
        if target:
            return target[0]
    return absolute
