"""Splitting a streaming Markdown answer into finished blocks and the one still growing.

CommonMark never reopens a block once the next top-level block has started, so every
top-level block but the last is final: it is rendered (rich) and printed once. Only
the trailing block stays live. Parsing is block-level only (no inline pass) and only
over the text not yet printed, and it runs only when a chunk brings a newline (a block
can end nowhere else), so the cost of a token does not grow with the answer.
"""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def _parser() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    md.core.ruler.disable(["inline", "text_join"])  # block structure is all that is needed here
    return md


class BlockSplitter:
    """Feed chunks; get back the text of blocks that are finished, in order."""

    def __init__(self) -> None:
        self.pending = ""  # text not yet handed out as finished blocks

    def feed(self, chunk: str) -> str:
        """Add ``chunk``; return the text of the blocks it finished ("" when none)."""
        self.pending += chunk
        if "\n" not in chunk:
            return ""
        return self._take_finished()

    def finish(self) -> str:
        """The end of the answer: everything left is finished."""
        text, self.pending = self.pending, ""
        return text

    @property
    def tail(self) -> str:
        """The trailing block (and any blank lines before it), still growing."""
        return self.pending

    def _take_finished(self) -> str:
        text = self.pending
        cut = text.rfind("\n") + 1  # the unfinished last line cannot end a block
        starts = [
            token.map[0]
            for token in _parser().parse(text[:cut])
            if token.level == 0 and token.map is not None and token.nesting >= 0
        ]
        if len(starts) < 2:
            return ""
        last = starts[-1]
        offset = _line_offset(text, last)
        done, self.pending = text[:offset], text[offset:]
        return done


def _line_offset(text: str, line: int) -> int:
    """Where line number ``line`` (0-based) starts in ``text``."""
    offset = 0
    for _ in range(line):
        found = text.find("\n", offset)
        if found < 0:
            return len(text)
        offset = found + 1
    return offset
