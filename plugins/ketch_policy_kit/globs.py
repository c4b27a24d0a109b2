"""The one glob dialect of permission rules and tools, with its flags in one place.

Every glob a rule or a tool matches goes through this module (wcmatch, MIT):

* **names** -- a rule's tool name (``mcp__time__*``), an ``allowed-tools`` path scope,
  a protected or secret file name (``.env.*``), an environment variable (``AWS_*``), a
  language server's file pattern, an attestation policy's model or host:
  :func:`match_name` / :func:`names_matcher`, wcmatch's ``fnmatch`` with
  :func:`name_flags`. ``*`` and ``?`` match any character (``/`` and a leading ``.``
  included), ``[...]`` is a class (``[!...]`` or ``[^...]`` negated), ``\\`` escapes,
  case-sensitive on every platform, no braces.
* **tool globs** over paths relative to a base (the ``glob`` tool's pattern, ``grep``'s
  include): :func:`compile_tool_glob`, wcmatch's ``glob`` with :func:`tool_glob_flags`.
  ``*`` stays inside one component, ``**`` as a whole component crosses directories,
  ``{a,b}`` are alternatives; with ``match_base`` a slash-free pattern (``*.py``)
  matches the last component in any directory.
* **rule path globs** over absolute paths (``read(src/**)``, ``write(/tmp/*.log)``):
  :func:`compile_glob`, below. The same characters (``*``, ``?``, ``[...]``, ``**``,
  ``**/`` for zero or more directories; ``**`` inside a component crosses ``/``
  too), and a pattern without glob characters, or ending in ``/``, also covers
  everything beneath it: wcmatch's dialect under :func:`rule_glob_flags` (a test
  compares the two over generated patterns), matched by a linear-time automaton rather
  than by wcmatch itself: wcmatch compiles a glob to a backtracking regular expression, whose time
  grows with a power of the path's length per ``**`` (``/**/a/**/a/**/a/b`` against a
  path 1,000 directories deep: 73 s), and a rule can come from a repository's config.

The shell's own expansion (bash's dialect) is modelled apart, where the shell is:
:mod:`ketch_shell_kit.bashglob`. Ignore files are ripgrep's ``ignore`` crate's
(:mod:`ketch_tool_kit.walk`).

How the rule automaton works: a pattern is compiled once into tokens and matched by
simulating the automaton over the path with the states as the bits of one integer: a
handful of integer operations per character, whatever the pattern (no backtracking, no
set of states to copy).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# --- names and tool globs: wcmatch ------------------------------------------------------


def _fnmatch() -> Any:
    from wcmatch import fnmatch  # imported on first use: off the startup path

    return fnmatch


def _glob() -> Any:
    from wcmatch import glob

    return glob


def name_flags() -> int:
    """The name flags: ``CASE`` (case-sensitive on every platform) | ``DOTMATCH``
    (``*`` matches a leading dot, as in a rule ``.env*``)."""
    fnmatch = _fnmatch()
    return int(fnmatch.CASE | fnmatch.DOTMATCH)


def tool_glob_flags(*, match_base: bool = False) -> int:
    """The tool glob flags: ``GLOBSTAR`` (``**`` crosses directories) | ``BRACE``
    (``{a,b}``), plus ``MATCHBASE`` when a slash-free pattern should match a base name
    in any directory (``grep``'s include ``*.py``)."""
    glob = _glob()
    return int(glob.GLOBSTAR | glob.BRACE | (glob.MATCHBASE if match_base else 0))


def rule_glob_flags() -> int:
    """The rule path flags, wcmatch's spelling of what :func:`compile_glob` matches (a
    test holds the two together): ``GLOBSTAR`` | ``DOTGLOB`` (``*`` matches dot names;
    a rule about ``src/*`` covers ``src/.env``)."""
    glob = _glob()
    return int(glob.GLOBSTAR | glob.DOTGLOB)


def match_name(name: str, pattern: str) -> bool:
    """Whether ``name`` (a tool's, a file's, a variable's) matches the name glob."""
    return bool(_fnmatch().fnmatch(name, pattern, flags=name_flags()))


def match_any_name(name: str, patterns: Iterable[str]) -> bool:
    return any(match_name(name, pattern) for pattern in patterns)


def names_matcher(patterns: Iterable[str]) -> Callable[[str], bool]:
    """Many name globs as one compiled expression: one match per name, not one per glob."""
    include, _ = _fnmatch().translate(list(patterns), flags=name_flags())
    compiled = re.compile("|".join(f"(?:{part})" for part in include) or "(?!)")
    return lambda name: compiled.fullmatch(name) is not None


def is_magic(part: str) -> bool:
    """Whether a tool glob's component has glob characters (not a literal directory)."""
    return bool(_glob().is_magic(part, flags=tool_glob_flags()))


def compile_tool_glob(pattern: str, *, match_base: bool = False) -> Callable[[str], bool]:
    """A tool's glob, compiled once, as a test of a path relative to the glob's base."""
    matcher = _glob().compile([pattern], flags=tool_glob_flags(match_base=match_base))
    return lambda relative: bool(matcher.match(relative))


# --- rule path globs: the linear-time automaton ----------------------------------------

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
