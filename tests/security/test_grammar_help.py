"""A grammar that cannot silently age: every long option a listed program accepts, by
its own ``--help`` on this machine, must be known to the grammar table.

An option the table does not know makes a command *not proven* (it asks), so a
missing one is not a hole by itself -- but a program that grows a new option (``--pre``
once was new) must be classified by a person, not fall through unread. A program that
is not installed here is skipped, with the reason.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from ketch_shell_kit.grammar import TABLE
from ketch_shell_kit.grammar.spec import Program

LONG = re.compile(r"(?<![\w-])--(?:\[no-\])?([a-z0-9][a-z0-9-]*)")
# Words --help shows after ``--`` that are not option names.
PROSE = frozenset({"help", "version"})


def help_text(argv: list[str]) -> str:
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=20,
        stdin=subprocess.DEVNULL,
        env={"LC_ALL": "C", "PATH": "/usr/bin:/bin", "COLUMNS": "200"},
        check=False,
    )
    return done.stdout + done.stderr


def option_lines(text: str) -> list[str]:
    """Lines that list options (they start with a dash after indentation)."""
    return [line for line in text.splitlines() if re.match(r"^\s*(-\w|--\w|-\w,|--\[no-\])", line)]


def advertised(text: str) -> set[str]:
    found: set[str] = set()
    for line in option_lines(text):
        head = re.split(r"\s{2,}|\t", line.strip(), maxsplit=1)[0]
        found.update(LONG.findall(head))
    return found


def unknown(program: Program, names: set[str]) -> list[str]:
    missing = []
    for name in sorted(names):
        if name in program.long or name in program.help_ignore or name in PROSE & set(program.long):
            continue
        if program.negatable and name.startswith("no-") and name[3:] in program.long:
            continue
        missing.append(f"--{name}")
    return missing


CHECKED = sorted(
    name for name, program in TABLE.items() if program.help_argv != () and name != "git"
)


@pytest.mark.parametrize("name", CHECKED)
def test_every_long_option_in_help_is_in_the_grammar(name: str) -> None:
    program = TABLE[name]
    if shutil.which(name) is None:
        pytest.skip(f"{name} is not installed on this machine")
    text = help_text(list(program.help_argv or (name, "--help")))
    names = advertised(text)
    if not names:
        pytest.skip(f"{name} --help lists no long options here ({text.strip()[:80]!r})")
    missing = unknown(program, names)
    assert missing == [], (
        f"{name} accepts {missing}, which the grammar does not list: classify them in ketch_shell_kit/grammar"
    )


GIT_SUBS = sorted(TABLE["git"].subcommands)


@pytest.mark.parametrize("sub", GIT_SUBS)
def test_every_long_option_of_a_git_subcommand_is_in_the_grammar(sub: str) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed on this machine")
    program = TABLE["git"].subcommands[sub]
    text = help_text(["git", sub, "-h"])
    names = advertised(text)
    if not names:
        pytest.skip(f"git {sub} -h lists no long options here")
    assert unknown(program, names) == []


def test_the_check_can_fail() -> None:
    """The control: an option the grammar does not list is reported."""
    program = TABLE["head"]
    assert unknown(program, {"lines", "bytes"}) == []
    assert unknown(program, {"lines", "exec-something"}) == ["--exec-something"]
    assert advertised("  -n, --lines=[-]NUM  print\n      --frobnicate  new\n") == {
        "lines",
        "frobnicate",
    }


def test_the_table_is_well_formed() -> None:
    """Every entry parses, names itself, and no alias is listed for two options."""
    for name, program in TABLE.items():
        assert program.name == name or name in ("mawk", "gawk", "nawk")
        seen: dict[str, int] = {}
        for option in program.options:
            for alias in option.names:
                assert alias not in seen or seen[alias] == id(option), (
                    f"{name}: {alias} listed twice"
                )
                seen[alias] = id(option)
