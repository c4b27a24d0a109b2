"""The grammar is data: ``grammar.json`` holds to its schema, the schema to the vocabulary
the analysis reads, and the wheel ships the file.

The loader trusts the file (it is on the analysis path); these tests are where a typo in
an entry -- an unknown type or tag, a flag with a value type, two repeating operands, an
include of a set that does not exist -- is caught.
"""

from __future__ import annotations

import json
import tomllib
import typing
from pathlib import Path

import pytest
from pydantic import ValidationError

from ketch_shell_kit.grammar import TABLE, spec
from ketch_shell_kit.grammar.schema import SCHEMA_FILE, Grammar, Tag, ValueType, json_schema
from ketch_shell_kit.grammar.spec import GrammarError
from ketch_shell_kit.grammar.table import DATA_FILE, load, parse, read_text

ROOT = Path(__file__).resolve().parents[2]


def test_the_data_file_holds_to_its_schema() -> None:
    Grammar.model_validate(json.loads(read_text()))


def test_the_schema_speaks_the_analysis_vocabulary() -> None:
    assert set(typing.get_args(ValueType)) == spec.TYPES
    assert set(typing.get_args(Tag)) == spec.TAGS


def test_the_exported_json_schema_is_current() -> None:
    """grammar.schema.json is what editors validate the file with: regenerate it with
    ``python -c 'from ketch_shell_kit.grammar.schema import *; SCHEMA_FILE.write_text(json_schema())'``."""
    assert SCHEMA_FILE.read_text(encoding="utf-8") == json_schema()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d["programs"]["cat"]["options"].append({"names": ["-Q"], "type": "read"}),
            "argument",
        ),
        (
            lambda d: d["programs"]["cat"]["operands"].append({"type": "tree", "repeat": "+"}),
            "repeating",
        ),
        (
            lambda d: d["programs"]["cat"]["options"].append({"names": ["-Q"], "tags": ["sneaky"]}),
            "sneaky",
        ),
        (lambda d: d["programs"]["grep"]["options"].append({"include": "nope"}), "nope"),
        (lambda d: d["programs"]["cat"].update(run="rm -rf /"), "run"),
        (lambda d: d["programs"]["cat"]["options"].append({"names": ["-Q;x"]}), "-Q;x"),
    ],
)
def test_the_schema_refuses_a_bad_entry(
    change: typing.Callable[[dict], object], message: str
) -> None:
    """The control: the validation above can fail, on each kind of mistake."""
    data = json.loads(read_text())
    change(data)
    with pytest.raises(ValidationError, match=message):
        Grammar.model_validate(data)


def test_a_damaged_file_is_a_clear_error() -> None:
    with pytest.raises(GrammarError, match="grammar data .* is damaged"):
        parse('{"programs": {}}')
    with pytest.raises(GrammarError, match="damaged"):
        parse("{not json")


def test_the_table_is_the_data() -> None:
    """Every program of the data is in the table, shared option sets expanded in place,
    git's subcommands under git."""
    data = json.loads(read_text())
    assert list(TABLE) == list(data["programs"])
    grep, egrep = TABLE["grep"], TABLE["egrep"]
    assert grep.options == egrep.options and grep.help_argv is None and egrep.help_argv == ()
    assert TABLE["gawk"].options is TABLE["awk"].options and TABLE["gawk"].name == "gawk"
    log = TABLE["git"].subcommands["log"]
    assert log.name == "git log" and log.negatable and "stat" in log.long and "grep" in log.long
    assert (
        sum(len(p.options) for p in TABLE.values())
        + sum(len(s.options) for s in TABLE["git"].subcommands.values())
        > 3800
    )


def test_the_wheel_ships_the_data() -> None:
    """The file is package data (a non-editable install has no source tree to read)."""
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = settings["tool"]["setuptools"]["package-data"]["ketch_shell_kit.grammar"]
    assert DATA_FILE in shipped and SCHEMA_FILE.name in shipped
    assert load() is load()  # read once per process
