"""Path globs for rules, matched in linear time (no regex backtracking).

``*`` and ``?`` stay inside one path component, ``**`` crosses components, ``**/``
matches zero or more whole directories, ``[...]`` is a class (``[!...]`` or
``[^...]`` negated, ranges like ``a-z``). A pattern without glob characters, or
ending in ``/``, also covers everything beneath it.

A pattern is compiled once into tokens and matched by simulating the automaton over
the path: time is proportional to len(path) x len(pattern), whatever the pattern.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

# token kinds
LIT, ONE, STAR, DSTAR, DIRS, CLASS = range(6)


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
        tokens = self.tokens
        count = len(tokens)
        if count == 1 and tokens[0].kind == LIT and tokens[0].char == "/" and self.covers_below:
            return path.startswith("/")
        # A state is a token index; ``-(i + 1)`` is "inside a directory name of the
        # ``**/`` at i".
        states = _closure({0}, tokens)
        for position, char in enumerate(path):
            if self.covers_below and char == "/" and count in states and position > 0:
                return True
            following: set[int] = set()
            for state in states:
                if state < 0:
                    index = -state - 1
                    following.add(index if char == "/" else state)
                    continue
                if state >= count:
                    continue
                token = tokens[state]
                if token.kind == STAR:
                    if char != "/":
                        following.add(state)
                elif token.kind == DSTAR:
                    following.add(state)
                elif token.kind == DIRS:
                    if char != "/":
                        following.add(-state - 1)
                elif token.accepts(char):
                    following.add(state + 1)
            if not following:
                return False
            states = _closure(following, tokens)
        return count in states


def _closure(states: set[int], tokens: tuple[Token, ...]) -> set[int]:
    """Add the states reachable without reading a character (``*``, ``**`` and ``**/`` may match nothing)."""
    stack = list(states)
    seen = set(states)
    while stack:
        state = stack.pop()
        if (
            0 <= state < len(tokens)
            and tokens[state].kind in (STAR, DSTAR, DIRS)
            and state + 1 not in seen
        ):
            seen.add(state + 1)
            stack.append(state + 1)
    return seen


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
            tokens.append(Token(DIRS))
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
