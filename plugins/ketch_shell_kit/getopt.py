"""Reading a command's arguments against its grammar, the way ``getopt_long`` does.

* ``--name`` resolves exactly, or by a unique prefix (``--co`` is ``--compress-program``
  only when no other long option starts with ``co``); an ambiguous or unknown one is a
  problem (getopt would refuse it; the analysis never guesses which was meant);
* ``--name=value`` and ``--name value`` for a required value, only ``--name=value`` for
  an optional one;
* short options cluster (``-rni``); a short option with a value takes the rest of the
  cluster (``-fvalue``) or the next word;
* ``--`` ends the options; ``-`` alone is an operand;
* GNU programs permute (options may follow operands); wrappers stop at the first
  operand, which is the command they run.

A word only known at run time where an option could stand is reported, since it could
be any option (``sort "$x"`` may be ``sort -o/elsewhere``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ketch_shell_kit.grammar.spec import Option, Program
from ketch_shell_kit.words import Word

_NUMERIC = re.compile(r"^-\d+$")


@dataclass
class Parsed:
    options: list[tuple[Option, Word | None, str]] = field(
        default_factory=list
    )  # option, value, as written
    operands: list[Word] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # unknown, ambiguous, malformed options
    unknown_words: list[Word] = field(
        default_factory=list
    )  # run-time words where an option could be
    rest_index: int | None = None  # non-permuting programs: where the operands start in ``args``


def resolve_long(program: Program, name: str) -> tuple[Option | None, str]:
    """The option ``--name`` means, or None with why."""
    exact = program.long.get(name)
    if exact is not None:
        return exact, ""
    if program.abbreviations and name:
        candidates = {id(o): o for key, o in program.long.items() if key.startswith(name)}
        if len(candidates) == 1:
            return next(iter(candidates.values())), ""
        if len(candidates) > 1:
            names = sorted(k for k, o in program.long.items() if k.startswith(name))
            return (
                None,
                f"'--{name}' is ambiguous for {program.name} ({', '.join('--' + n for n in names[:4])})",
            )
    if program.negatable and name.startswith("no-"):
        target, _ = resolve_long(program, name[3:])
        if target is not None:
            return Option(names=(f"--{name}",)), ""  # turning an option off
    return None, f"{program.name} has no option '--{name}' that ketch knows"


def _operand(
    program: Program, result: Parsed, args: list[Word] | tuple[Word, ...], index: int
) -> bool:
    """Take ``args[index]`` as an operand; True when option reading stops there (a
    wrapper's command starts, and every word from it on is an operand)."""
    if program.permute:
        result.operands.append(args[index])
        return False
    result.rest_index = index
    result.operands.extend(args[index:])
    return True


def parse(program: Program, args: list[Word] | tuple[Word, ...]) -> Parsed:  # noqa: C901 - getopt is one loop
    result = Parsed()
    index = 0
    only_operands = False
    while index < len(args):
        word = args[index]
        if only_operands:
            result.operands.append(word)
            index += 1
            continue
        value = word.value
        if (
            value is None
            or word.pattern is not None
            and (word.pattern.startswith("-") or not word.single)
        ):
            # A run-time word (or a glob that may expand to ``-x`` names) where an option could stand.
            result.unknown_words.append(word)
            if _operand(program, result, args, index):
                return result
            index += 1
            continue
        if value == "--":
            only_operands = True
            index += 1
            continue
        if value == "-" or not value.startswith("-"):
            if _operand(program, result, args, index):
                return result
            index += 1
            continue
        if program.numeric and _NUMERIC.match(value):
            result.options.append((Option(names=(value,), type="num"), None, value))
            index += 1
            continue
        if value.startswith("--") or (
            program.single_dash_long and value[1:].split("=", 1)[0] in program.long
        ):
            body = value[2:] if value.startswith("--") else value[1:]
            name, has_value, attached = body.partition("=")
            option, why = resolve_long(program, name)
            if option is None:
                result.problems.append(why)
                index += 1
                continue
            if option.arg == "required":
                if has_value:
                    result.options.append((option, Word(attached, word.source), value))
                    index += 1
                elif index + 1 < len(args):
                    result.options.append((option, args[index + 1], value))
                    index += 2
                else:
                    result.problems.append(f"{program.name} {value} needs a value")
                    index += 1
                continue
            if has_value and option.arg != "optional":
                result.problems.append(f"{program.name} --{name} takes no value")
                index += 1
                continue
            result.options.append(
                (option, Word(attached, word.source) if has_value else None, value)
            )
            index += 1
            continue
        # A cluster of short options.
        letters = value[1:]
        position = 0
        consumed_next = False
        while position < len(letters):
            letter = letters[position]
            option = program.short.get(letter)
            if option is None:
                result.problems.append(f"{program.name} has no option '-{letter}' that ketch knows")
                break
            rest = letters[position + 1 :]
            if option.arg == "required":
                if rest:
                    result.options.append((option, Word(rest, word.source), f"-{letter}"))
                elif index + 1 < len(args):
                    result.options.append((option, args[index + 1], f"-{letter}"))
                    consumed_next = True
                else:
                    result.problems.append(f"{program.name} -{letter} needs a value")
                break
            if option.arg == "optional":
                result.options.append(
                    (option, Word(rest, word.source) if rest else None, f"-{letter}")
                )
                break
            result.options.append((option, None, f"-{letter}"))
            position += 1
        index += 2 if consumed_next else 1
    return result
