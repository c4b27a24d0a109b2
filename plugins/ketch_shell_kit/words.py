"""Shell words as the analysis sees them: a value after quote removal, or unknown."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Word:
    """One shell word.

    ``value`` is the word after quote removal, or None when bash only knows it at run
    time (a variable, ``$(...)``, brace expansion). ``pattern`` is set when unquoted glob
    characters make it a pathname pattern (quoted parts escaped as ``[*]``). ``single``
    is False when the word may become several words or none (an unquoted expansion,
    ``"$@"``): then even its position in the command is unknown.
    """

    value: str | None
    source: str
    pattern: str | None = None
    single: bool = True

    @property
    def static(self) -> bool:
        return self.value is not None and self.pattern is None


def literal(text: str) -> Word:
    return Word(value=text, source=text)


def dynamic(source: str, *, single: bool = False) -> Word:
    return Word(value=None, source=source, single=single)


def glob_escape(text: str) -> str:
    """Text as a glob that matches only itself."""
    return "".join(f"[{c}]" if c in "*?[]" else "\\\\" if c == "\\" else c for c in text)


def dquote_unescape(text: str) -> str:
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


_ANSI = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_NUMERIC_ESCAPE = re.compile(
    r"x([0-9a-fA-F]{1,2})|u([0-9a-fA-F]{1,4})|U([0-9a-fA-F]{1,8})|([0-7]{1,3})"
)


def ansi_c(body: str) -> str | None:
    """Decode the inside of ``$'...'``; None when it uses an escape this does not know
    (``\\cX`` control characters, for one)."""
    out: list[str] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char != "\\":
            out.append(char)
            index += 1
            continue
        following = body[index + 1 : index + 2]
        if following in _ANSI:
            out.append(_ANSI[following])
            index += 2
            continue
        match = _NUMERIC_ESCAPE.match(body, index + 1)
        if not match:
            return None
        digits = next(g for g in match.groups() if g)
        base = 8 if match.group(4) else 16
        code = int(digits, base)
        if code == 0 or code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            return None  # bash cuts the word at NUL; surrogates are not text
        out.append(chr(code))
        index = match.end()
    return "".join(out)
