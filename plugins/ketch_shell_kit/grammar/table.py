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
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
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
    programs: dict[str, Program]
    builtins: frozenset[str]  # names bash runs itself whatever PATH says
    handler_tables: dict[str, Any]  # per handler: its own facts (find's primaries, ...)


def read_text() -> str:
    return resources.files("ketch_shell_kit.grammar").joinpath(DATA_FILE).read_text("utf-8")


@cache
def load() -> Grammar:
    """The installed grammar (read on first use, once per process)."""
    return parse(read_text())


def parse(text: str) -> Grammar:
    try:
        data = json.loads(text)
        sets = {name: _options(entries, {}) for name, entries in data["option_sets"].items()}
        programs: dict[str, Program] = {}
        for name, entry in data["programs"].items():
            if "same_as" in entry:
                programs[name] = replace(programs[entry["same_as"]], name=name)
            else:
                programs[name] = _program(name, entry, sets)
        return Grammar(
            programs=programs,
            builtins=frozenset(data["builtins"]),
            handler_tables=data["handler_tables"],
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise GrammarError(f"the grammar data ({DATA_FILE}) is damaged: {exc!r}") from exc


def _program(name: str, entry: dict[str, Any], sets: dict[str, tuple[Option, ...]]) -> Program:
    extra = {key: entry[key] for key in _PROGRAM_FIELDS if key in entry}
    if "help_argv" in entry:
        extra["help_argv"] = tuple(entry["help_argv"])
    for key in ("help_ignore", "help_ignore_short"):
        if key in entry:
            extra[key] = frozenset(entry[key])
    subcommands = {
        sub: _program(f"{name} {sub}", spec, sets)
        for sub, spec in entry.get("subcommands", {}).items()
    }
    return Program(
        name=name,
        options=_options(entry.get("options", ()), sets),
        operands=_operands(entry.get("operands", ())),
        subcommands=subcommands,
        **extra,
    )


def _options(
    entries: list[dict[str, Any]], sets: dict[str, tuple[Option, ...]]
) -> tuple[Option, ...]:
    found: list[Option] = []
    for entry in entries:
        if "include" in entry:
            found.extend(sets[entry["include"]])
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
