"""Turning a fetched page into text a model can read.

HTML becomes Markdown (headings, lists, links, code blocks kept) with markdownify on
BeautifulSoup's stdlib ``html.parser`` (both MIT); scripts, styles, navigation chrome
and forms are dropped first. Other text types are returned as they are.
"""

from __future__ import annotations

import re

DROP_TAGS = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "canvas",
    "iframe",
    "form",
    "button",
    "input",
    "select",
    "textarea",
    "nav",
    "footer",
    "head",
)
TEXT_TYPES = (
    "text/",
    "application/json",
    "application/xml",
    "application/xhtml+xml",
    "application/javascript",
    "application/x-javascript",
    "application/ld+json",
    "application/rss+xml",
    "application/atom+xml",
    "application/x-yaml",
    "application/yaml",
    "application/toml",
)


def is_html(content_type: str, body: bytes) -> bool:
    if "html" in content_type:
        return True
    if content_type:
        return False
    start = body[:512].lstrip().lower()
    return start.startswith((b"<!doctype html", b"<html"))


def is_text(content_type: str) -> bool:
    return (
        not content_type
        or content_type.startswith(TEXT_TYPES)
        or content_type.endswith(("+json", "+xml"))
    )


def decode(body: bytes, charset: str | None) -> str:
    if charset:
        try:
            return body.decode(charset, "replace")
        except LookupError:
            pass
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        from charset_normalizer import from_bytes

        best = from_bytes(body[: 1 << 20]).best()
        return body.decode(best.encoding if best else "utf-8", "replace")


def html_to_text(body: bytes, charset: str | None, base_url: str = "") -> tuple[str, str]:
    """(title, markdown) of an HTML page; links made absolute against ``base_url``."""
    from urllib.parse import urljoin

    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(body, "html.parser", from_encoding=charset)
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup(list(DROP_TAGS)):
        tag.decompose()
    if base_url:
        for link in soup.find_all("a", href=True):
            href = str(link["href"])
            if href.startswith("javascript:"):
                del link["href"]
            elif not href.startswith("#"):
                link["href"] = urljoin(base_url, href)
    root = soup.find("main") or soup.find("article") or soup.body or soup
    markdown = MarkdownConverter(heading_style="ATX", bullets="-", strip=["img"]).convert_soup(root)
    return title, tidy(markdown)


def tidy(text: str) -> str:
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()
