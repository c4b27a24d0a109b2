"""The first sentence of a description, for one-line listings (the system prompt's
tool list, help screens).

A full stop ends a sentence only when the next word starts a new one: not after an
abbreviation (``e.g.``, ``i.e.``, ``etc.``, ``vs.``), not inside a code span
(`` `*.py` ``), not in a number or a file name (``1.5``, ``setup.py``). A sentence
longer than the limit is cut at a word, with ``…``.
"""

from __future__ import annotations

import re

ABBREVIATIONS = frozenset({"e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "incl.", "esp."})
_END = re.compile(r"[.!?](?=\s+[\"'(\[]?[A-Z0-9`])")


def first_sentence(text: str, limit: int = 160) -> str:
    """The description's first sentence, whitespace collapsed, at most ``limit`` characters."""
    flat = " ".join(text.split())
    for match in _END.finditer(flat):
        end = match.end()
        if flat[:end].count("`") % 2:  # inside a code span
            continue
        word = flat[:end].rsplit(" ", 1)[-1].lower()
        if word in ABBREVIATIONS:
            continue
        flat = flat[:end]
        break
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1].rsplit(" ", 1)[0] if " " in flat[: limit - 1] else flat[: limit - 1]
    return cut.rstrip(" ,;:") + "…"
