"""Positions as the LSP counts them (UTF-16 code units) and as people do, and file URIs."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote, unquote, urlparse


def uri_of(path: Path) -> str:
    """``file://`` URI of an absolute path (bytes that are not UTF-8 kept exact)."""
    raw = str(path).encode("utf-8", "surrogateescape")
    return "file://" + quote(raw, safe="/")


def path_of(uri: str) -> Path | None:
    """The local path of a ``file://`` URI; None for any other scheme."""
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    return Path(unquote(parsed.path, errors="surrogateescape"))


def utf16_column(line: str, index: int) -> int:
    """UTF-16 code units before ``line[index]``."""
    return len(line[:index].encode("utf-16-le", "surrogatepass")) // 2


def index_of_utf16(line: str, units: int) -> int:
    """The string index at ``units`` UTF-16 code units into ``line`` (clamped)."""
    count = 0
    for index, char in enumerate(line):
        if count >= units:
            return index
        count += 2 if ord(char) > 0xFFFF else 1
    return len(line)


def lines_of(text: str) -> list[str]:
    """Lines as the LSP splits them (``\\n``, ``\\r\\n`` and ``\\r`` end a line)."""
    return re.split(r"\r\n|\r|\n", text)


def offset_at(text: str, line: int, character: int) -> int:
    """The string offset of an LSP position (0-based line, UTF-16 character) in ``text``;
    past the end of a line is its end, past the last line is the end of the text."""
    pieces = re.split(r"(\r\n|\r|\n)", text)
    offset = 0
    for number in range(line):
        index = number * 2
        if index + 1 >= len(pieces):
            return len(text)
        offset += len(pieces[index]) + len(pieces[index + 1])
    current = pieces[line * 2] if line * 2 < len(pieces) else ""
    return offset + index_of_utf16(current, character)


def symbol_column(line_text: str, symbol: str, occurrence: int = 1) -> int | None:
    """Where ``symbol`` starts on a line (its ``occurrence``-th match as a whole word, or
    as plain text when it never occurs as a word); None when it does not occur."""
    if not symbol:
        return None
    starts = [
        m.start()
        for m in re.finditer(
            r"(?<![\w])" + re.escape(symbol) + r"(?![\w])"
            if re.match(r"\w", symbol)
            else re.escape(symbol),
            line_text,
        )
    ]
    if not starts:
        starts = [m.start() for m in re.finditer(re.escape(symbol), line_text)]
    if len(starts) < occurrence:
        return None
    return starts[occurrence - 1]
