"""Small checkers for the script languages of "read-only" programs: a sed script,
an awk program (parsed by :mod:`.awk`), a jq filter. Each accepts a conservative subset; anything outside it
counts as not read-only (the command then asks)."""

from __future__ import annotations

import re

_SED_SIMPLE = set("pdDnNgGhHxlq=QPzF")


def sed_script_read_only(script: str) -> bool:
    """True when a sed script only prints/edits its output stream (a small grammar;
    anything outside it counts as not read-only)."""
    text = script
    index = 0
    length = len(text)

    def regex(position: int, delimiter: str) -> int | None:
        while position < length:
            char = text[position]
            if char == "\\":
                position += 2
                continue
            if char == delimiter:
                return position + 1
            if char == "\n":
                return None
            position += 1
        return None

    def address(position: int) -> int | None:
        if position < length and text[position].isdigit():
            while position < length and (text[position].isdigit() or text[position] == "~"):
                position += 1
            return position
        if position < length and text[position] == "$":
            return position + 1
        if position < length and text[position] == "/":
            return regex(position + 1, "/")
        if position + 1 < length and text[position] == "\\":
            return regex(position + 2, text[position + 1])
        return position

    while index < length:
        while index < length and text[index] in " \t\n;":
            index += 1
        if index >= length:
            break
        after = address(index)
        if after is None:
            return False
        index = after
        if index < length and text[index] == ",":
            index += 1
            if index < length and text[index] in "+~":
                index += 1
            after = address(index)
            if after is None:
                return False
            index = after
        while index < length and text[index] in " \t":
            index += 1
        if index < length and text[index] == "!":
            index += 1
            while index < length and text[index] in " \t":
                index += 1
        if index >= length:
            return False
        command = text[index]
        index += 1
        if command in _SED_SIMPLE:
            while index < length and text[index].isdigit():
                index += 1
        elif command in "{}":
            pass
        elif command in "btT:":
            while index < length and text[index] not in ";\n":
                index += 1
        elif command in "aic":
            while index < length and text[index] != "\n":
                index += 2 if text[index] == "\\" else 1
        elif command in "sy":
            if index >= length or text[index] in "\n\\":
                return False
            delimiter = text[index]
            first = regex(index + 1, delimiter)
            if first is None:
                return False
            second = regex(first, delimiter)
            if second is None:
                return False
            index = second
            if command == "s":
                while index < length and text[index] in "gpiImM0123456789":
                    index += 1
                if index < length and text[index] in "ew":
                    return False
        else:
            return False  # w W r R e v and anything unknown
        while index < length and text[index] in " \t":
            index += 1
        if index < length and text[index] not in ";\n}":
            return False
    return True


def awk_program_read_only(program: str) -> bool:
    """True when an awk program reads only its input (see :mod:`.awk`)."""
    from ketch_shell_kit.grammar.awk import program_problems

    return not program_problems(program)


def jq_filter_read_only(text: str) -> bool:
    """jq cannot write files or run programs; it can load modules and data files
    (``import``, ``include``, ``input_filename`` is harmless), which this refuses."""
    if "\x00" in text:
        return False
    stripped = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return not re.search(r"\b(import|include|modulemeta|get_search_list|\$__prog_args)\b", stripped)
