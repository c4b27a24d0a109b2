"""``@path`` in a prompt: the syntax, in one place (the attachments plugin reads the
files, the shell completes the paths as they are typed).

A mention starts with ``@`` at the start of the text or after whitespace or an opening
bracket (so ``me@example.com`` and ``x@y`` are not mentions), and runs to the next
whitespace; ``@"a file.txt"`` quotes a path with spaces. Trailing punctuation that ends
a sentence (``@notes.txt.``) is dropped when the path with it does not exist.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_MENTION = re.compile(r'(?:(?<=^)|(?<=[\s(\[{]))@(?:"([^"\n]+)"|([^\s"\'`<>|]+))')
_TRAILING = ".,;:!?)]}'\""
# The word being typed ends the text: ``@`` then anything but whitespace (quote optional).
_TYPING = re.compile(r'(?:^|(?<=[\s(\[{]))@"?([^\s"]*)$')


@dataclass(frozen=True)
class Mention:
    start: int  # where the ``@`` is
    end: int  # just past the mention as typed
    path: str  # the path it names (quotes removed)


def find_mentions(text: str, exists: Callable[[str], bool] = lambda path: True) -> list[Mention]:
    """Every ``@path`` in ``text`` whose path ``exists`` (trailing punctuation tried off)."""
    found: list[Mention] = []
    for match in _MENTION.finditer(text):
        quoted, bare = match.group(1), match.group(2)
        if quoted is not None:
            if exists(quoted):
                found.append(Mention(match.start(), match.end(), quoted))
            continue
        path = bare
        while path and not exists(path) and path[-1] in _TRAILING:
            path = path[:-1]
        if path and exists(path):
            found.append(Mention(match.start(), match.start() + 1 + len(path), path))
    return found


def typing_mention(before_cursor: str) -> str | None:
    """The partial path of an ``@`` mention being typed at the cursor, or None."""
    match = _TYPING.search(before_cursor)
    return match.group(1) if match else None
