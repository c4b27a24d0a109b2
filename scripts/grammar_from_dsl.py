"""Convert the grammar's string notation (the Python modules of ketch_shell_kit.grammar)
into ``grammar.json``, exactly: the written file is read back with the new loader and
compared, program by program, with the table the notation built.

Run once, from the worktree: ``python scripts/grammar_from_dsl.py``. (The notation is
removed after the conversion; this script goes with it.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ketch_shell_kit.grammar import BUILTINS, TABLE, coreutils, git, search
from ketch_shell_kit.grammar.spec import Operand, Option, Program, options
from ketch_shell_kit.grammar.table import DATA_FILE, parse

OUT = Path(git.__file__).with_name(DATA_FILE)

# Option lists several programs share, by the name the data gives them.
SETS = {
    "checksums": options(coreutils.SUMS),
    "grep": options(search.GREP_OPTIONS),
    "git-diff": options(git.DIFF),
    "git-revisions": options(git.REVISIONS),
}
AWK_SPELLINGS = ("mawk", "gawk", "nawk")
NOTES = {
    "awk": "mawk's and gawk's options together; -W (mawk) and the gawk ones that load code or "
    "write files are not read-only",
    "jq": "--arg/--argjson/--slurpfile/--rawfile take two values each (a name, then a value or a "
    "file): not read by getopt, so the words after them cannot be placed",
    "time": "`time` first in a command is bash's keyword (-p only; the next word is the command); "
    "as a path, or run by a wrapper, it is GNU time (gnu-time)",
    "rg": "ripgrep 13/14: every flag; rg searches directories recursively by default and takes no "
    "abbreviations",
    "sudo": "runs a command as another user: never proven; the command it runs is read for the "
    "guards and the deny rules",
}


def operand(op: Operand) -> dict[str, str]:
    return {"type": op.type, **({"repeat": op.repeat} if op.repeat else {})}


def option(opt: Option) -> dict[str, Any]:
    out: dict[str, Any] = {"names": list(opt.names)}
    if opt.arg:
        out["arg"] = opt.arg
        out["type"] = opt.type
    else:
        assert opt.type == "str", opt
    if opt.tags:
        out["tags"] = sorted(opt.tags)
    if opt.ops is not None:
        out["operands"] = [operand(o) for o in opt.ops]
    return out


def option_list(opts: tuple[Option, ...]) -> list[dict[str, Any]]:
    """The options, with each run that is a shared set written as an include."""
    out: list[dict[str, Any]] = []
    index = 0
    ordered = sorted(SETS.items(), key=lambda kv: -len(kv[1]))
    while index < len(opts):
        for name, members in ordered:
            if opts[index : index + len(members)] == members:
                out.append({"include": name})
                index += len(members)
                break
        else:
            out.append(option(opts[index]))
            index += 1
    return out


def program(spec: Program, name: str) -> dict[str, Any]:
    default = Program(name=name)
    out: dict[str, Any] = {}
    if spec.options:
        out["options"] = option_list(spec.options)
    if spec.operands:
        out["operands"] = [operand(o) for o in spec.operands]
    for key in (
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
    ):
        if getattr(spec, key) != getattr(default, key):
            out[key] = getattr(spec, key)
    if spec.help_argv is not None:
        out["help_argv"] = list(spec.help_argv)
    if spec.help_ignore:
        out["help_ignore"] = sorted(spec.help_ignore)
    assert not spec.subcommands
    if name in NOTES:
        out = {"note": NOTES[name], **out}
    return out


def primaries() -> dict[str, Any]:
    out = {}
    for name, (args, effect) in search.FIND_PRIMARIES.items():
        out[name] = {
            **({"args": list(args)} if args else {}),
            **({"effect": effect} if effect else {}),
        }
    return out


def convert() -> dict[str, Any]:
    programs: dict[str, Any] = {}
    for name, spec in TABLE.items():
        if name in AWK_SPELLINGS:
            programs[name] = {"same_as": "awk"}
            continue
        programs[name] = program(spec, name)
    programs["git"]["subcommands"] = {
        sub: program(spec, f"git {sub}") for sub, spec in {**git.READ_ONLY, **git.LISTING}.items()
    }
    listing: dict[str, Any] = {}
    for sub in git.LISTING:
        allowed = git.LISTING_OK.get(sub)
        listing[sub] = (
            None if allowed is None else sorted(allowed, key=lambda v: (v is not None, v or ""))
        )
    return {
        "$schema": "./grammar.schema.json",
        "note": "The programs ketch_shell_kit can read: see docs/permissions.md and spec.py for the "
        "vocabulary, schema.py for the contract.",
        "option_sets": {name: [option(o) for o in members] for name, members in SETS.items()},
        "programs": programs,
        "builtins": sorted(BUILTINS),
        "handler_tables": {
            "find": {"primaries": primaries()},
            "ps": {"bsd_letters": "".join(sorted(coreutils.PS_BSD_LETTERS))},
            "git": {
                "listing": listing,
                "index_refresh": sorted(git.INDEX_REFRESH),
                "prints_content": sorted(git.PRINTS_CONTENT),
                "prints_config": sorted(git.PRINTS_CONFIG),
                "worktree": sorted(git.WORKTREE),
                "network": sorted(git.NETWORK),
                "files": sorted(git.FILES),
                "display_config": git.SAFE_CONFIG.pattern,
            },
        },
    }


def check(text: str) -> None:
    """The written file reads back as exactly the notation's table."""
    loaded = parse(text)
    assert list(loaded.programs) == list(TABLE), "program order differs"
    for name, spec in TABLE.items():
        got = loaded.programs[name]
        if name == "git":
            subs = {**git.READ_ONLY, **git.LISTING}
            assert got.subcommands == subs, "git subcommands differ"
            got = Program(**{**got.__dict__, "subcommands": {}})
            got.__post_init__()
        assert got == spec, f"{name} differs"
    assert loaded.builtins == BUILTINS


def _compact(value: Any) -> bool:
    if isinstance(value, list):
        return not any(isinstance(v, dict) and ("names" in v or "include" in v) for v in value)
    if isinstance(value, dict):
        return (
            "names" in value
            or "include" in value
            or set(value) <= {"type", "repeat"}
            or set(value) <= {"args", "effect"}
        )
    return True


def dump(value: Any, indent: str = "") -> str:
    """JSON with one option (or operand, primary, list of names) per line."""
    inner = indent + "  "
    if _compact(value):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {dump(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    items = [f"{inner}{dump(v, inner)}" for v in value]
    return "[\n" + ",\n".join(items) + "\n" + indent + "]"


def main() -> int:
    data = convert()
    text = dump(data) + "\n"
    assert json.loads(text) == data
    check(text)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({len(text)} bytes, {len(data['programs'])} programs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
