"""Path globs for rules, matched in linear time (no regex backtracking).

``*`` and ``?`` stay inside one path component, ``**`` crosses components, ``**/``
matches zero or more whole directories, ``[...]`` is a class (``[!...]`` or
``[^...]`` negated, ranges like ``a-z``). A pattern without glob characters, or
ending in ``/``, also covers everything beneath it.

A pattern is compiled once into tokens and matched by simulating the automaton over
the path with the states as the bits of one integer: a handful of integer operations
per character, whatever the pattern (no backtracking, no set of states to copy).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

# token kinds (``**/`` is DIRS, DIN and a literal '/': skipped whole, or anything then '/')
LIT, ONE, STAR, DSTAR, DIRS, CLASS, DIN = range(7)


@dataclass(frozen=True)
class Token:
    kind: int
    char: str = ""
    negate: bool = False
    ranges: tuple[tuple[str, str], ...] = ()

    def accepts(self, char: str) -> bool:
        if self.kind == LIT:
            return char == self.char
        if self.kind == ONE:
            return char != "/"
        if self.kind == CLASS:
            if char == "/":
                return False
            inside = any(low <= char <= high for low, high in self.ranges)
            return inside != self.negate
        return False


@dataclass(frozen=True)
class CompiledGlob:
    tokens: tuple[Token, ...]
    covers_below: bool

    def matches(self, path: str) -> bool:
        """Bit-parallel automaton: bit i is "before token i"; one pass over the path,
        each step a few integer operations on len(pattern)-bit numbers."""
        tokens = self.tokens
        count = len(tokens)
        if count == 1 and tokens[0].kind == LIT and tokens[0].char == "/" and self.covers_below:
            return path.startswith("/")
        eps1 = eps3 = loop_any = loop_name = 0
        for index, token in enumerate(tokens):
            bit = 1 << index
            if token.kind in (STAR, DSTAR, DIRS, DIN):
                eps1 |= bit
            if token.kind == DIRS:
                eps3 |= bit  # no directory at all: past the '/' too
            if token.kind in (DSTAR, DIN):
                loop_any |= bit
            elif token.kind == STAR:
                loop_name |= bit
        accept = 1 << count
        masks: dict[str, int] = {}

        def advance(char: str) -> int:
            mask = masks.get(char)
            if mask is None:
                mask = 0
                for index, token in enumerate(tokens):
                    if token.kind in (LIT, ONE, CLASS) and token.accepts(char):
                        mask |= 1 << index
                masks[char] = mask
            return mask

        def closure(states: int) -> int:
            while True:
                grown = states | ((states & eps1) << 1) | ((states & eps3) << 3)
                if grown == states:
                    return states
                states = grown

        states = closure(1)
        for position, char in enumerate(path):
            if self.covers_below and char == "/" and states & accept and position > 0:
                return True
            loops = loop_any | (loop_name if char != "/" else 0)
            states = closure(((states & advance(char)) << 1) | (states & loops))
            if not states:
                return False
        return bool(states & accept)


@lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> CompiledGlob:
    """Compile an absolute POSIX path glob (one linear pass)."""
    trailing = pattern.endswith("/")
    pattern = os.path.normpath(pattern)
    text = pattern.rstrip("/") or "/"
    has_glob = any(c in text for c in "*?[")
    covers_below = trailing or not has_glob
    # The next ']' at or after each index, found in one backward pass, so a pattern
    # full of '[' stays linear.
    next_close = [-1] * (len(text) + 1)
    for index in range(len(text) - 1, -1, -1):
        next_close[index] = index if text[index] == "]" else next_close[index + 1]
    tokens: list[Token] = []
    index = 0
    while index < len(text):
        char = text[index]
        if text.startswith("**/", index):
            # Zero or more directories: skipped whole (an epsilon over both tokens), or
            # anything followed by the '/'.
            tokens.append(Token(DIRS))
            tokens.append(Token(DIN))
            tokens.append(Token(LIT, "/"))
            index += 3
        elif text.startswith("**", index):
            tokens.append(Token(DSTAR))
            index += 2
        elif char == "*":
            tokens.append(Token(STAR))
            index += 1
        elif char == "?":
            tokens.append(Token(ONE))
            index += 1
        elif char == "[":
            body_start = index + 1
            negate = body_start < len(text) and text[body_start] in "!^"
            if negate:
                body_start += 1
            end = next_close[body_start + 1] if body_start + 1 <= len(text) else -1
            if end == -1:
                tokens.append(Token(LIT, char))
                index += 1
                continue
            body = text[body_start:end]
            ranges: list[tuple[str, str]] = []
            position = 0
            while position < len(body):
                if position + 2 < len(body) and body[position + 1] == "-":
                    ranges.append((body[position], body[position + 2]))
                    position += 3
                else:
                    ranges.append((body[position], body[position]))
                    position += 1
            tokens.append(Token(CLASS, negate=negate, ranges=tuple(ranges)))
            index = end + 1
        else:
            tokens.append(Token(LIT, char))
            index += 1
    return CompiledGlob(tokens=tuple(tokens), covers_below=covers_below)
