"""Read ``grammar.json`` (the program table, package data) into :mod:`.spec`'s types.

The file is plain data: programs, their options and operands, subcommands, and the
*name* of a handler (Python, in :mod:`ketch_shell_kit.interpret` and
:mod:`.git`) for what a table cannot say. Its contract is :mod:`.schema`, checked by
the table tests rather than here: this runs on the analysis path and uses :mod:`json`
alone. The file is read once per process (a fact of the installed package, the same for
every kernel).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from ketch_shell_kit.grammar.spec import GrammarError, Operand, Option, Program

DATA_FILE = "grammar.json"

_PROGRAM_FIELDS = (
    "permute",
    "numeric",
    "abbreviations",
    "negatable",
    "single_dash_long",
    "reason",
    "privileged",
    "handler",
    "default_operand",
    "steers",
)


@dataclass(frozen=True)
class Grammar:
    programs: Programs
    builtins: frozenset[str]  # names bash runs itself whatever PATH says
    handler_tables: dict[str, Any]  # per handler: its own facts (find's primaries, ...)


class Programs(Mapping[str, Program]):
    """The table, each program built from its entry on first lookup: the analysis of a
    command line looks up a handful of the ~200 programs, so start-up reads the file
    and builds nothing else. Entries are immutable once built (a process-wide cache)."""

    def __init__(self, entries: dict[str, Any], option_sets: dict[str, Any]) -> None:
        self._entries = entries
        self._option_sets = option_sets
        self._built: dict[str, Program] = {}
        self._sets: dict[str, tuple[Option, ...]] = {}

    def __getitem__(self, name: str) -> Program:
        program = self._built.get(name)
        if program is None:
            entry = self._entries[name]
            try:
                if "same_as" in entry:
                    program = replace(self[entry["same_as"]], name=name)
                else:
                    program = self._program(name, entry)
            except (KeyError, TypeError, ValueError) as exc:
                raise GrammarError(
                    f"the grammar data ({DATA_FILE}) is damaged at {name}: {exc!r}"
                ) from exc
            self._built[name] = program
        return program

    def get(
        self, name: str, default: Any = None
    ) -> Any:  # the analysis's lookup: no exception on a miss
        program = self._built.get(name)
        if program is not None:
            return program
        return self[name] if name in self._entries else default

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def _option_set(self, name: str) -> tuple[Option, ...]:
        found = self._sets.get(name)
        if found is None:
            found = self._sets[name] = _options(self._option_sets[name], self._option_set)
        return found

    def _program(self, name: str, entry: dict[str, Any]) -> Program:
        extra = {key: entry[key] for key in _PROGRAM_FIELDS if key in entry}
        if "help_argv" in entry:
            extra["help_argv"] = tuple(entry["help_argv"])
        if "help_ignore" in entry:
            extra["help_ignore"] = frozenset(entry["help_ignore"])
        subcommands = {
            sub: self._program(f"{name} {sub}", spec)
            for sub, spec in entry.get("subcommands", {}).items()
        }
        return Program(
            name=name,
            options=_options(entry.get("options", ()), self._option_set),
            operands=_operands(entry.get("operands", ())),
            subcommands=subcommands,
            **extra,
        )


def read_text() -> str:
    # Beside this module: pip installs packages unpacked (importlib.resources would
    # cost more to import than the whole table takes to read).
    return Path(__file__).with_name(DATA_FILE).read_text(encoding="utf-8")


@cache
def load() -> Grammar:
    """The installed grammar (read on first use, once per process)."""
    return parse(read_text())


def parse(text: str) -> Grammar:
    try:
        data = json.loads(text)
        programs, option_sets = data["programs"], data["option_sets"]
        if not isinstance(programs, dict) or not isinstance(option_sets, dict):
            raise TypeError("programs and option_sets are objects")
        return Grammar(
            programs=Programs(programs, option_sets),
            builtins=frozenset(data["builtins"]),
            handler_tables=data["handler_tables"],
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise GrammarError(f"the grammar data ({DATA_FILE}) is damaged: {exc!r}") from exc


def _options(
    entries: list[dict[str, Any]], option_set: Callable[[str], tuple[Option, ...]]
) -> tuple[Option, ...]:
    found: list[Option] = []
    for entry in entries:
        if "include" in entry:
            found.extend(option_set(entry["include"]))
            continue
        arg = entry.get("arg", "")
        ops = entry.get("operands")
        found.append(
            Option(
                names=tuple(entry["names"]),
                arg=arg,
                type=entry["type"] if arg else "str",
                tags=frozenset(entry.get("tags", ())),
                ops=None if ops is None else _operands(ops),
            )
        )
    return tuple(found)


def _operands(entries: list[dict[str, str]]) -> tuple[Operand, ...]:
    return tuple(Operand(entry["type"], entry.get("repeat", "")) for entry in entries)


@cache
def find_primaries() -> dict[str, tuple[tuple[str, ...], str]]:
    """find's expression: primary -> (its arguments' types, "exec" | "delete" | "")."""
    table = load().handler_tables["find"]["primaries"]
    return {
        name: (tuple(entry.get("args", ())), entry.get("effect", ""))
        for name, entry in table.items()
    }


@cache
def ps_bsd_letters() -> frozenset[str]:
    """The letters of BSD-style ``ps aux`` the ps handler reads (``e``, environments, is not one)."""
    return frozenset(load().handler_tables["ps"]["bsd_letters"])


@dataclass(frozen=True)
class GitFacts:
    """What the git handler knows of subcommands besides their grammar."""

    listing: dict[str, frozenset[str | None] | None]  # read-only in listing forms only
    index_refresh: frozenset[str]  # porcelain that refreshes .git/index's stat cache
    prints_content: frozenset[str]  # prints tracked content (a tracked secret would show)
    prints_config: frozenset[str]  # prints the repository's configuration
    worktree: frozenset[str]  # changes the repository or its work tree
    network: frozenset[str]  # uses the network
    files: frozenset[str]  # writes files the analysis does not follow
    display_config: re.Pattern[str]  # ``-c key=value`` that only changes how output looks


@cache
def git_facts() -> GitFacts:
    table = load().handler_tables["git"]
    return GitFacts(
        listing={
            sub: None if allowed is None else frozenset(allowed)
            for sub, allowed in table["listing"].items()
        },
        index_refresh=frozenset(table["index_refresh"]),
        prints_content=frozenset(table["prints_content"]),
        prints_config=frozenset(table["prints_config"]),
        worktree=frozenset(table["worktree"]),
        network=frozenset(table["network"]),
        files=frozenset(table["files"]),
        display_config=re.compile(table["display_config"], re.IGNORECASE),
    )
