"""An unknown option, named, with the known options closest to it."""

from __future__ import annotations

import argparse
import difflib


def unknown_option(parser: argparse.ArgumentParser, args: list[str]) -> str | None:
    """ "unknown option --modle (did you mean --model or --mode?)" for the first unknown
    ``--option`` in ``args`` (before ``--``), or None when every option is known (the
    error is about something else: argparse's message says it best)."""
    known = option_names(parser)
    for word in args:
        if word == "--":
            break
        option = word.split("=", 1)[0]
        if not option.startswith("--") or option in known:
            continue
        message = f"unknown option {option}"
        if close := closest(option, known):
            message += f" (did you mean {' or '.join(close)}?)"
        return message
    return None


def option_names(parser: argparse.ArgumentParser) -> set[str]:
    """Every ``--option`` of the parser and of its subcommands (their options may come
    back to the top parser as unrecognized arguments)."""
    names = {o for o in parser._option_string_actions if o.startswith("--")}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in set(action.choices.values()):
                names |= option_names(child)
    return names


def closest(word: str, known: set[str]) -> list[str]:
    """The known options one edit away (a swap of two letters first), else difflib's best."""

    def distance(a: str, b: str) -> float:  # optimal string alignment; a swap costs 0.9
        row = [[i + j if not i * j else 0.0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
        for i in range(1, len(a) + 1):
            for j in range(1, len(b) + 1):
                cost = a[i - 1] != b[j - 1]
                row[i][j] = min(row[i - 1][j] + 1, row[i][j - 1] + 1, row[i - 1][j - 1] + cost)
                if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                    row[i][j] = min(row[i][j], row[i - 2][j - 2] + 0.9)
        return row[len(a)][len(b)]

    near = sorted((distance(word, k), k) for k in known)
    best = [k for d, k in near if d <= 1.0][:2]
    return best or difflib.get_close_matches(word, sorted(known), n=1, cutoff=0.7)
