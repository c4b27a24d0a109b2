"""Arguments in a command's text, as Claude Code substitutes them.

``$ARGUMENTS`` is everything typed after the command; ``$ARGUMENTS[N]`` and ``$N`` are
the N-th argument, 0-based (Claude Code's rule since 2.1.19), split with shell quoting
(``"two words"`` is one). ``\\$`` escapes a dollar. A body that uses none of them gets
``ARGUMENTS: ...`` appended when arguments were given.
"""

from __future__ import annotations

import re
import shlex

_PLACEHOLDER = re.compile(r"\\\$|\$ARGUMENTS\[(\d+)\]|\$ARGUMENTS|\$(\d+)")


def split_arguments(argument: str) -> list[str]:
    try:
        return shlex.split(argument)
    except ValueError:  # an unmatched quote: plain words
        return argument.split()


def expand_arguments(body: str, argument: str) -> str:
    words = split_arguments(argument)
    used = False

    def replace(match: re.Match[str]) -> str:
        nonlocal used
        token = match.group(0)
        if token == "\\$":
            return "$"
        used = True
        index = match.group(1) or match.group(2)
        if index is None:
            return argument
        n = int(index)
        return words[n] if n < len(words) else ""

    text = _PLACEHOLDER.sub(replace, body)
    if not used and argument.strip():
        text = f"{text.rstrip()}\n\nARGUMENTS: {argument.strip()}"
    return text
