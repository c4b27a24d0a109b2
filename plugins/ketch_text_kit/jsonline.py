"""One JSON value per line, from a peer ketch does not trust: bounded in size and depth.

Every stdio frontend reads lines someone else wrote (an editor over ACP, a script
feeding ``--input-format stream-json``, a hook's or a permission prompt command's
answer). A line can be anything: not UTF-8, not JSON, a 300 MB blob, or ``[[[[...``
nested deep enough to blow Python's recursion limit. :func:`read_line` reads at most
``max_bytes`` of a line (the rest is read and dropped, never held), and
:func:`parse` turns a line into a JSON value or a :class:`LineProblem` with a one-line
reason: never a ``RecursionError``, never a traceback.

JSON's own grammar is followed strictly: UTF-8 only (no UTF-16 guessing), and no
``NaN``/``Infinity`` (Python accepts them; JSON does not).
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any, BinaryIO

MAX_DEPTH = 128  # arrays and objects inside each other (serde_json's limit too)
KEEP_HEAD = 1024  # bytes of an over-long line kept, so its request id can still be read

# A JSON string, with escapes; what is inside cannot open or close a bracket.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class LineProblem(ValueError):
    """Why a line is not a usable JSON value. ``kind``: ``too_long``, ``not_utf8``,
    ``not_json`` or ``too_deep``; the message is one line, meant for the peer."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class Line:
    """One line as read: its bytes (the first :data:`KEEP_HEAD` of them when it was
    too long) and its full size."""

    data: bytes
    size: int
    too_long: bool = False


def too_deep(raw: bytes, max_depth: int = MAX_DEPTH) -> bool:
    """Whether arrays/objects in ``raw`` nest deeper than ``max_depth``.

    Cheap for ordinary lines (fewer opening brackets than the limit: no scan at all);
    otherwise strings are cut out and matched bracket pairs removed level by level,
    all in C, so a wide 50 MB line costs a few passes, not a Python loop per byte."""
    if raw.count(b"[") + raw.count(b"{") <= max_depth:
        return False
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    for _ in range(max_depth):
        if not brackets:
            return False
        shorter = brackets.replace(b"[]", b"").replace(b"{}", b"")
        if len(shorter) == len(brackets):
            return False  # unbalanced: not JSON, which the parser will say
        brackets = shorter
    return bool(brackets)


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse(raw: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of one line (without its newline), or :class:`LineProblem`.
    (Text already decoded works too: a program's whole stdout, say.)"""
    if isinstance(raw, str):
        text, raw = raw, raw.encode("utf-8", "surrogatepass")
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LineProblem(
                "not_utf8", f"not UTF-8 (an invalid byte at offset {exc.start})"
            ) from None
    if too_deep(raw, max_depth):
        raise LineProblem("too_deep", f"nested deeper than {max_depth} levels")
    try:
        return json.loads(text, parse_constant=_no_constants)
    except RecursionError:  # pragma: no cover - too_deep() catches it first
        raise LineProblem("too_deep", f"nested deeper than {max_depth} levels") from None
    except ValueError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise LineProblem("not_json", f"not JSON ({reason[:200]})") from None


def too_long_problem(line: Line, max_bytes: int) -> LineProblem:
    return LineProblem(
        "too_long", f"a line of {line.size:,} bytes, more than the {max_bytes:,} allowed"
    )


def read_line(stream: BinaryIO, max_bytes: int) -> Line | None:
    """The next line of a blocking binary stream (None at EOF). A line longer than
    ``max_bytes`` is read to its end in pieces and dropped (only its head is kept)."""
    data = stream.readline(max_bytes + 1)
    if not data:
        return None
    if len(data) <= max_bytes or data.endswith(b"\n"):
        return Line(data.rstrip(b"\r\n"), len(data))
    size = len(data)
    while True:
        more = stream.readline(1 << 20)
        size += len(more)
        if not more or more.endswith(b"\n"):
            return Line(data[:KEEP_HEAD], size, too_long=True)


async def read_line_async(reader: asyncio.StreamReader, max_bytes: int) -> Line | None:
    """The same for an asyncio reader (whose own ``limit`` should be ``max_bytes``)."""
    head = b""
    size = 0
    while True:
        try:
            data = await reader.readuntil(b"\n")
        except asyncio.LimitOverrunError as exc:
            chunk = await reader.readexactly(exc.consumed)
            head = head or chunk[:KEEP_HEAD]
            size += len(chunk)
            continue
        except asyncio.IncompleteReadError as exc:
            data = exc.partial
            if not data and not size:
                return None
        size += len(data)
        if size > max_bytes or head:
            return Line((head or data)[:KEEP_HEAD], size, too_long=True)
        return Line(data.rstrip(b"\r\n"), size)
