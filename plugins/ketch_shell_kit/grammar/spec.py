"""The grammar table's vocabulary: programs, options, operand types and tags.

The table itself is data (``grammar.json``, read by :mod:`.table`; its contract is
:mod:`.schema`). An option lists every spelling (``-n``, ``--lines``); it is a flag, or
takes a value that is required (``-n 5``, ``-n5``, ``--lines=5``) or optional (only
``--color=always``; ``--color`` alone), and says what that value is.

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
the first operand is a file), ``tree`` (operands are read recursively), ``privileged``;
an option's own ``operands`` replace the program's when it is given.

A program's **operands** are listed in order, each with how often it comes (``*`` zero
or more, ``+`` one or more, ``?`` optional; at most one repeating operand): ``pat`` then
``read*`` (a pattern, then files), ``read+`` then ``write`` (sources, then the
destination), ``str`` then ``cmd`` (a duration, then a command).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    """The grammar data cannot be read (a damaged install: the shipped file is checked
    against its schema by the table tests)."""


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
    handler: str = ""  # the reader (interpret.HANDLERS) for what a table cannot say
    subcommands: dict[str, Program] = field(default_factory=dict)
    default_operand: str | None = None  # what a recursive reader reads with no operand
    steers: bool = False  # changes the shell itself (alias, shopt, hash): later commands may mean something else
    help_argv: tuple[str, ...] | None = None  # how the --help test asks it (None: [name, "--help"])
    help_ignore: frozenset[str] = frozenset()  # long options --help mentions that are not options
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
