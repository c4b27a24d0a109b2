"""Invisible Unicode that can hide instructions from a human reader: found, stripped, counted.

Zero-width characters, bidirectional controls (the "Trojan Source" trick), Unicode tag
characters (ASCII smuggling) and variation-selector runs (emoji smuggling) render as
nothing, yet a model reads them. Instruction files, pointers, the memory and the README
are cleaned before they reach the system prompt, and what was removed is reported.

Kept where they are ordinary typography: a single emoji variation selector (U+FE0E/
U+FE0F) after a non-ASCII character, a zero-width joiner between two emoji, and a
byte-order mark at the very start of a file (removed silently).
"""

from __future__ import annotations

import re

CLASSES: tuple[tuple[str, str], ...] = (
    ("zero-width", "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e\u00ad"),
    ("bidi", "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u061c"),
    (
        "filler",
        "\u115f\u1160\u3164\uffa0\u17b4\u17b5\u206a\u206b\u206c\u206d\u206e\u206f\ufff9\ufffa\ufffb",
    ),
)
_CLASS_OF = {ch: name for name, chars in CLASSES for ch in chars}
_PATTERN = re.compile(
    "["
    + "".join(chars for _, chars in CLASSES)
    + "\ufe00-\ufe0f\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)


def _kind(ch: str) -> str:
    code = ord(ch)
    if 0xE0000 <= code <= 0xE007F:
        return "tag"
    if 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF:
        return "variation-selector"
    return _CLASS_OF.get(ch, "invisible")


def _is_emoji(ch: str) -> bool:
    code = ord(ch)
    return code >= 0x1F000 or 0x2600 <= code <= 0x27BF or 0x2B00 <= code <= 0x2BFF


def strip_invisible(text: str) -> tuple[str, dict[str, int]]:
    """The text without hidden characters, and how many of each kind were removed."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if text.isascii() or not _PATTERN.search(text):
        return text, {}
    counts: dict[str, int] = {}
    out: list[str] = []
    last = 0
    for match in _PATTERN.finditer(text):
        start = match.start()
        ch = match.group()
        before = text[start - 1] if start else ""
        after = text[start + 1] if start + 1 < len(text) else ""
        if ch in "\ufe0e\ufe0f" and before and not before.isascii() and not _PATTERN.match(before):
            continue  # ordinary emoji presentation
        if ch == "\u200d" and before and after and _is_emoji(before) and _is_emoji(after):
            continue  # an emoji sequence (family, profession)
        out.append(text[last:start])
        last = start + 1
        kind = _kind(ch)
        counts[kind] = counts.get(kind, 0) + 1
    out.append(text[last:])
    return "".join(out), counts


def describe(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
