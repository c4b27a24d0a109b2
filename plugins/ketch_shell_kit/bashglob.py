"""Pathname expansion in bash's dialect (not Python's), to see what a glob reads.

What bash -c does by default (bash 5.2): ``*`` and ``?`` never match ``/``; a name
starting with ``.`` is only matched by a pattern component that starts with a literal
``.`` (dotglob off), and ``.``/``..`` never (globskipdots); ``[...]`` classes take
``!`` or ``^`` for negation, ``]`` first as a literal, ranges by code point
(globasciiranges), and POSIX classes (``[[:alpha:]]``); ``**`` is ``*`` (globstar
off); a backslash quotes the next character; no match leaves the word as written.

Python's ``glob`` differs on several of these (``.[[:alpha:]]nv`` matches ``.env`` in
bash, nothing in Python), which let a read of ``.env`` pass unseen. Matching is an
automaton over tokens (linear per name, whatever the pattern), and what cannot be
matched faithfully (equivalence classes ``[=a=]``, collating symbols ``[.a.]``) is
refused: the caller then treats the word as unknown.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

MAX_MATCHES = 2000

_CLASSES = {
    "alpha": str.isalpha, "digit": lambda c: c in "0123456789", "alnum": str.isalnum, "upper": str.isupper,
    "lower": str.islower, "space": str.isspace, "blank": lambda c: c in " \t", "print": str.isprintable,
    "graph": lambda c: c.isprintable() and not c.isspace(), "cntrl": lambda c: ord(c) < 32 or ord(c) == 127,
    "punct": lambda c: c.isprintable() and not c.isalnum() and not c.isspace(), "xdigit": lambda c: c in "0123456789abcdefABCDEF",
    "word": lambda c: c.isalnum() or c == "_",
}  # fmt: skip


class Unsupported(ValueError):
    """A pattern this module cannot match the way bash would."""


@dataclass(frozen=True)
class _Token:
    kind: str  # lit | one | star | class
    char: str = ""
    negate: bool = False
    members: tuple[tuple[str, str], ...] = ()
    classes: tuple[str, ...] = ()

    def accepts(self, char: str) -> bool:
        if self.kind == "lit":
            return char == self.char
        if self.kind == "one":
            return True
        inside = any(low <= char <= high for low, high in self.members) or any(
            _CLASSES[c](char) for c in self.classes
        )
        return inside != self.negate


def has_magic(pattern: str) -> bool:
    """Whether a pattern component has an unquoted glob character."""
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char in "*?":
            return True
        if char == "[" and _class_end(pattern, index) is not None:
            return True
        index += 1
    return False


def _class_end(pattern: str, start: int) -> int | None:
    """Index of the ']' closing the class opened at ``start``, or None (a literal '[')."""
    index = start + 1
    if index < len(pattern) and pattern[index] in "!^":
        index += 1
    if index < len(pattern) and pattern[index] == "]":
        index += 1
    while index < len(pattern):
        char = pattern[index]
        if char == "[" and pattern[index + 1 : index + 2] in (":", "=", "."):
            close = pattern.find(pattern[index + 1] + "]", index + 2)
            if close == -1:
                return None
            index = close + 2
            continue
        if char == "]":
            return index
        if char == "/":
            return None
        index += 1
    return None


def compile_component(pattern: str) -> tuple[_Token, ...]:
    tokens: list[_Token] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            tokens.append(_Token("lit", pattern[index + 1]))
            index += 2
        elif char == "*":
            if not tokens or tokens[-1].kind != "star":
                tokens.append(_Token("star"))
            index += 1
        elif char == "?":
            tokens.append(_Token("one"))
            index += 1
        elif char == "[":
            end = _class_end(pattern, index)
            if end is None:
                tokens.append(_Token("lit", "["))
                index += 1
                continue
            body = pattern[index + 1 : end]
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            members: list[tuple[str, str]] = []
            classes: list[str] = []
            position = 0
            while position < len(body):
                if body.startswith("[:", position):
                    close = body.find(":]", position + 2)
                    name = body[position + 2 : close]
                    if name not in _CLASSES:
                        raise Unsupported(f"the character class [:{name}:]")
                    classes.append(name)
                    position = close + 2
                elif body.startswith(("[=", "[."), position):
                    raise Unsupported("equivalence classes and collating symbols")
                elif body[position] == "\\" and position + 1 < len(body):
                    members.append((body[position + 1], body[position + 1]))
                    position += 2
                elif position + 2 < len(body) and body[position + 1] == "-":
                    members.append((body[position], body[position + 2]))
                    position += 3
                else:
                    members.append((body[position], body[position]))
                    position += 1
            tokens.append(
                _Token("class", negate=negate, members=tuple(members), classes=tuple(classes))
            )
            index = end + 1
        else:
            tokens.append(_Token("lit", char))
            index += 1
    return tuple(tokens)


def match_name(tokens: tuple[_Token, ...], name: str) -> bool:
    """Whether one directory entry's name matches (bash's leading-dot rule included)."""
    if name in (".", ".."):
        return False
    if name.startswith(".") and not (tokens and tokens[0].kind == "lit" and tokens[0].char == "."):
        return False
    count = len(tokens)

    def closure(states: set[int]) -> set[int]:
        found = set(states)
        for state in sorted(states):
            while state < count and tokens[state].kind == "star":
                state += 1
                found.add(state)
        return found

    states = closure({0})
    for char in name:
        following: set[int] = set()
        for state in states:
            if state >= count:
                continue
            token = tokens[state]
            if token.kind == "star":
                following.add(state)
            elif token.accepts(char):
                following.add(state + 1)
        if not following:
            return False
        states = closure(following)
    return count in states


def unescape(component: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(component):
        if component[index] == "\\" and index + 1 < len(component):
            out.append(component[index + 1])
            index += 2
        elif (
            component[index] == "["
            and component[index + 2 : index + 3] == "]"
            and index + 2 < len(component)
        ):
            out.append(component[index + 1])  # ``[*]``: a quoted glob character
            index += 3
        else:
            out.append(component[index])
            index += 1
    return "".join(out)


def expand(pattern: str, cwd: str) -> list[str] | None:
    """The words bash expands ``pattern`` to, in ``cwd``; [] when nothing matches (bash
    then keeps the word); None when there are too many or bash's reading is unsure."""
    absolute = pattern.startswith("/")
    components = [c for c in pattern.split("/") if c != ""] if absolute else pattern.split("/")
    trailing_slash = pattern.endswith("/") and len(pattern) > 1
    if trailing_slash:
        components = components[:-1] if components and components[-1] == "" else components
    # (word so far, directory it names)
    current: list[tuple[str, str]] = [("/" if absolute else "", "/" if absolute else cwd)]
    seen_magic = False
    for position, component in enumerate(components):
        last = position == len(components) - 1
        following: list[tuple[str, str]] = []
        try:
            magic = has_magic(component)
            tokens = compile_component(component) if magic else ()
        except Unsupported:
            return None
        for word, directory in current:
            joiner = "" if not word or word.endswith("/") else "/"
            if not magic:
                literal = unescape(component)
                full = os.path.join(directory, literal)
                if seen_magic and not os.path.lexists(full):
                    continue  # bash only keeps expansions that exist
                following.append((word + joiner + literal, full))
                continue
            try:
                entries = sorted(os.listdir(directory or "."))
            except OSError:
                continue
            for name in entries:
                if not match_name(tokens, name):
                    continue
                full = os.path.join(directory, name)
                if (not last or trailing_slash) and not os.path.isdir(full):
                    continue
                following.append((word + joiner + name, full))
                if len(following) > MAX_MATCHES:
                    return None
        seen_magic = seen_magic or magic
        current = following
        if not current:
            return []
    words = [w + ("/" if trailing_slash else "") for w, _ in current]
    # A pattern whose components had no magic at all is not a glob; a pattern that
    # matched nothing in some directory never reaches here (the literal stays).
    return words if any(has_magic(c) for c in components) else []
