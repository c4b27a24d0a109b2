"""The grammar table's vocabulary: programs, options, operand types, and the small
text notation the data modules use to list them.

An option is written the way ``--help`` shows it, aliases joined by commas::

    -n,--lines=num          a required value of type num (``-n 5``, ``-n5``, ``--lines=5``)
    --color[=enum]          an optional value (only ``--color=always``; ``--color`` alone)
    -r,--recursive{tree}    a flag with a tag: operands are read recursively
    -i,--in-place[=str]{ops=write*}   a flag that changes what the operands are

Value and operand **types** say what a word is to the program:

* harmless values: ``str num pat fmt enum sig size time`` (any text; never a path);
* paths: ``read`` (its content is read), ``tree`` (a directory's whole content; ``vtree``: hidden entries skipped, as rg does),
  ``list`` (names and metadata only), ``write`` (created, changed or removed),
  ``link`` (a link to it is made), ``move`` (renamed away: written, and its content
  read under the new name), ``cwd`` (the program works in that directory);
* what runs: ``exec`` (a program it starts), ``code`` (code in another language),
  ``script`` (a bash script, analysed in turn), ``cmd`` (an operand: the rest of the
  words are a command, analysed in turn), ``env`` (``NAME=VALUE`` words);
* checked values: ``varname`` (a shell variable it assigns: a plain name that steers
  nothing), ``sedscript``, ``awkprog``, ``jqfilter``, ``gitconfig`` (``-c key=value``),
  ``gitrev`` (a revision; ``REV:path`` reads that path's blob).

**Tags** on an option: ``write exec net unsafe`` (using it is not read-only), ``hide``
(the guards cannot see what it runs or writes), ``opaque`` (it runs code the analysis
cannot read at all: the line is not understood), ``link`` (it makes links), ``drop`` (it supplies the pattern, so
the first operand is a file), ``tree`` (operands are read recursively), ``ops=SPEC``
(it replaces the operand spec), ``privileged``.

An **operand spec** lists the positional operands in order: ``pat read*`` (a pattern,
then files), ``read+ write`` (sources, then the destination), ``str cmd`` (a duration,
then a command). ``*`` is zero or more, ``+`` one or more, ``?`` optional; at most one
repeating token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

HARMLESS_TYPES = frozenset({"str", "num", "pat", "fmt", "enum", "sig", "size", "time", "x"})
PATH_TYPES = frozenset({"read", "tree", "vtree", "list", "write", "link", "cwd", "move"})
RUN_TYPES = frozenset({"exec", "code", "script", "cmd"})
CHECKED_TYPES = frozenset(
    {"varname", "sedscript", "awkprog", "jqfilter", "gitconfig", "gitrev", "env", "net", "unsafe"}
)
TYPES = HARMLESS_TYPES | PATH_TYPES | RUN_TYPES | CHECKED_TYPES
TAGS = frozenset(
    {
        "write",
        "exec",
        "net",
        "unsafe",
        "hide",
        "drop",
        "tree",
        "privileged",
        "replace",
        "link",
        "opaque",
    }
)
RISKY_TAGS = frozenset({"write", "exec", "net", "unsafe", "hide", "link", "opaque"})


class GrammarError(ValueError):
    """A grammar entry that does not parse (a bug in the table, caught by its tests)."""


@dataclass(frozen=True)
class Operand:
    type: str
    repeat: str = ""  # "", "*", "+", "?"


@dataclass(frozen=True)
class Option:
    names: tuple[str, ...]  # "-n", "--lines"
    arg: str = ""  # "" (a flag), "required", "optional"
    type: str = "str"  # the value's type, when it takes one
    tags: frozenset[str] = frozenset()
    ops: tuple[Operand, ...] | None = None  # operands that replace the program's

    @property
    def label(self) -> str:
        return next((n for n in self.names if n.startswith("--")), self.names[0])

    @property
    def risky(self) -> bool:
        return bool(self.tags & RISKY_TAGS) or self.type in (
            "write",
            "exec",
            "code",
            "script",
            "net",
            "unsafe",
            "varname",
            "cwd",
        )


@dataclass
class Program:
    """One program (or subcommand) of the table."""

    name: str
    options: tuple[Option, ...] = ()
    operands: tuple[Operand, ...] = ()
    permute: bool = True  # GNU getopt: options may follow operands (wrappers: False)
    numeric: bool = False  # ``-NUM`` is an option (head -5, nice -10)
    abbreviations: bool = True  # getopt_long: unique prefixes of long options expand
    negatable: bool = False  # git: ``--no-X`` for every long ``--X``
    single_dash_long: bool = False  # ``-name`` style (find, java)
    reason: str = ""  # when set, never read-only, with this reason (rm: "deletes files")
    privileged: bool = False
    handler: str = ""  # a custom reader in interpret.py (find, sed, git, shell...)
    subcommands: dict[str, Program] = field(default_factory=dict)
    default_operand: str | None = None  # what a recursive reader reads with no operand
    steers: bool = False  # changes the shell itself (alias, shopt, hash): later commands may mean something else
    help_argv: tuple[str, ...] | None = None  # how the --help test asks it (None: [name, "--help"])
    help_ignore: frozenset[str] = frozenset()  # long options --help mentions that are not options
    help_ignore_short: frozenset[str] = frozenset()  # short ones (letters), with why in the data
    short: dict[str, Option] = field(default_factory=dict)
    long: dict[str, Option] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for option in self.options:
            for name in option.names:
                if name.startswith("--") or (self.single_dash_long and len(name) > 2):
                    self.long[name.lstrip("-")] = option
                else:
                    self.short[name[1:]] = option

    @property
    def risky(self) -> bool:
        """Some option or operand writes, runs or reaches out: an option only known at
        run time could be one of those."""
        return any(o.risky for o in self.options) or any(
            op.type in ("write", "exec", "code", "script", "cmd") for op in self.operands
        )


_OPTION = re.compile(
    r"^(?P<names>-[^=\[{]+?)(?:(?P<req>=[a-z]+)|(?P<opt>\[=[a-z]+\]))?(?:\{(?P<tags>[^}]*)\})?$"
)


def options(text: str) -> tuple[Option, ...]:
    """Parse the option notation (see the module doc)."""
    found: list[Option] = []
    for token in text.split():
        match = _OPTION.match(token)
        if not match:
            raise GrammarError(f"cannot read option {token!r}")
        names = tuple(match.group("names").split(","))
        for name in names:
            if not re.fullmatch(r"--?[A-Za-z0-9?#@][A-Za-z0-9\-_.]*", name):
                raise GrammarError(f"bad option name {name!r} in {token!r}")
        arg, kind = "", "str"
        if match.group("req"):
            arg, kind = "required", match.group("req")[1:]
        elif match.group("opt"):
            arg, kind = "optional", match.group("opt")[2:-1]
        if kind not in TYPES:
            raise GrammarError(f"unknown type {kind!r} in {token!r}")
        tags: set[str] = set()
        ops: tuple[Operand, ...] | None = None
        for tag in (match.group("tags") or "").split(","):
            tag = tag.strip()
            if not tag:
                continue
            if tag.startswith("ops="):
                ops = operand_spec(tag[4:].replace("_", " "))
                continue
            if tag not in TAGS:
                raise GrammarError(f"unknown tag {tag!r} in {token!r}")
            tags.add(tag)
        found.append(Option(names=names, arg=arg, type=kind, tags=frozenset(tags), ops=ops))
    return tuple(found)


def operand_spec(text: str) -> tuple[Operand, ...]:
    result: list[Operand] = []
    for token in text.split():
        repeat = token[-1] if token[-1] in "*+?" else ""
        kind = token[:-1] if repeat else token
        if kind not in TYPES:
            raise GrammarError(f"unknown operand type {kind!r} in {text!r}")
        result.append(Operand(kind, repeat))
    if sum(1 for o in result if o.repeat in "*+" and o.repeat) > 1:
        raise GrammarError(f"more than one repeating operand in {text!r}")
    return tuple(result)


def program(name: str, opts: str = "", operands: str = "", **extra: Any) -> Program:
    """A table entry from the notation."""
    return Program(name=name, options=options(opts), operands=operand_spec(operands), **extra)
