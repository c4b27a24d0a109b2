"""The schema of ``grammar.json``: what an entry may say, checked by the table tests.

The loader (:mod:`.table`) reads the file with :mod:`json` alone and trusts it: this
model is the file's contract, validated in tests (``tests/policy/test_grammar_data.py``)
and exported as ``grammar.schema.json`` for editors; it is never imported on the
analysis path. The vocabulary (value types, tags) is :mod:`.spec`'s; a test keeps the
two the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ValueType = Literal[
    # harmless values (never a path)
    "str", "num", "pat", "fmt", "enum", "sig", "size", "time", "x",
    # paths
    "read", "tree", "vtree", "list", "write", "link", "cwd", "move",
    # what runs
    "exec", "code", "script", "cmd",
    # values a checker reads
    "varname", "sedscript", "awkprog", "jqfilter", "gitconfig", "gitrev", "env", "net", "unsafe",
]  # fmt: skip
Tag = Literal[
    "write", "exec", "net", "unsafe", "hide", "drop", "tree", "privileged", "replace", "link", "opaque"
]  # fmt: skip
OptionName = Field(pattern=r"^--?[A-Za-z0-9?#@][A-Za-z0-9\-_.]*$")

SCHEMA_FILE = Path(__file__).with_name("grammar.schema.json")


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Operand(_Entry):
    """One positional operand: what it is, and how often it comes."""

    type: ValueType
    repeat: Literal["*", "+", "?"] | None = Field(
        None, description="* zero or more, + one or more, ? optional; absent: exactly one"
    )


class Option(_Entry):
    """One option with its aliases, written as ``--help`` shows them."""

    names: list[str] = Field(min_length=1, description="every spelling: -n, --lines")
    arg: Literal["required", "optional"] | None = Field(
        None, description="absent: a flag; optional: only --name=VALUE carries one"
    )
    type: ValueType | None = Field(None, description="what the value is (with arg only)")
    tags: list[Tag] = Field(default_factory=list, description="what using the option does")
    operands: list[Operand] | None = Field(
        None, description="the operands the program takes instead, when this option is given"
    )
    note: str | None = None

    @model_validator(mode="after")
    def _check(self) -> Option:
        import re

        for name in self.names:
            if not re.fullmatch(r"--?[A-Za-z0-9?#@][A-Za-z0-9\-_.]*", name):
                raise ValueError(f"bad option name {name!r}")
        if (self.arg is None) != (self.type is None):
            raise ValueError(f"{self.names}: a value type goes with an argument, and only then")
        if self.operands is not None:
            _one_repeat(self.operands, self.names[0])
        return self


class Include(_Entry):
    """The options of a named set (``option_sets``), in place."""

    include: str


class Program(_Entry):
    """A program (or a subcommand). Every field but the options is optional."""

    options: list[Option | Include] = Field(default_factory=list)
    operands: list[Operand] = Field(default_factory=list)
    permute: bool = Field(True, description="GNU getopt: options may follow operands")
    numeric: bool = Field(False, description="-NUM is an option (head -5)")
    abbreviations: bool = Field(True, description="unique prefixes of long options expand")
    negatable: bool = Field(False, description="--no-X for every long --X (git)")
    single_dash_long: bool = Field(False, description="-name style long options (find, xxd)")
    reason: str = Field("", description="never read-only, for this reason")
    privileged: bool = False
    handler: str = Field(
        "", description="the Python reader (interpret.HANDLERS) for what is not table-shaped"
    )
    default_operand: str | None = None
    steers: bool = Field(False, description="changes how later commands are read")
    help_argv: list[str] | None = Field(
        None,
        description="how the drift test asks for help; absent: NAME --help; []: not asked",
    )
    help_ignore: list[str] = Field(
        default_factory=list, description="long names --help shows that are not options"
    )
    subcommands: dict[str, Program] = Field(default_factory=dict)
    same_as: str | None = Field(None, description="another spelling of this program")
    note: str | None = None

    @model_validator(mode="after")
    def _check(self) -> Program:
        _one_repeat(self.operands, "operands")
        if self.same_as is not None and set(self.model_fields_set) - {"same_as", "note"}:
            raise ValueError(f"an entry the same as {self.same_as} says nothing else")
        return self


class FindPrimary(_Entry):
    args: list[ValueType] = Field(default_factory=list)
    effect: Literal["exec", "delete"] | None = None


class FindTable(_Entry):
    primaries: dict[str, FindPrimary]


class PsTable(_Entry):
    bsd_letters: str


class GitTable(_Entry):
    listing: dict[str, list[str | None] | None] = Field(
        description="subcommands read-only in listing forms only: the first operands that "
        "list (null before the list: the handler reads that subcommand's options itself)"
    )
    index_refresh: list[str]
    prints_content: list[str]
    prints_config: list[str]
    worktree: list[str]
    network: list[str]
    files: list[str]
    display_config: str = Field(
        description="a regular expression: -c key=value that only changes output"
    )


class HandlerTables(_Entry):
    find: FindTable
    ps: PsTable
    git: GitTable


class Grammar(_Entry):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    schema_: str | None = Field(None, alias="$schema")
    note: str | None = None
    option_sets: dict[str, list[Option]]
    programs: dict[str, Program]
    builtins: list[str] = Field(
        description="names bash runs itself whatever PATH says (builtins, keywords)"
    )
    handler_tables: HandlerTables

    @model_validator(mode="after")
    def _check(self) -> Grammar:
        def visit(name: str, program: Program) -> None:
            for option in program.options:
                if isinstance(option, Include) and option.include not in self.option_sets:
                    raise ValueError(f"{name}: no option set {option.include!r}")
            if program.same_as is not None and program.same_as not in self.programs:
                raise ValueError(f"{name}: no program {program.same_as!r}")
            for sub, spec in program.subcommands.items():
                visit(f"{name} {sub}", spec)

        for name, program in self.programs.items():
            visit(name, program)
        return self


def _one_repeat(operands: list[Operand], where: str) -> None:
    if sum(1 for o in operands if o.repeat in ("*", "+")) > 1:
        raise ValueError(f"{where}: more than one repeating operand")


def json_schema() -> str:
    """The JSON Schema of the file, as ``grammar.schema.json`` holds it."""
    return json.dumps(Grammar.model_json_schema(by_alias=True), indent=1, sort_keys=True) + "\n"
