"""A grammar that cannot silently age: every option a listed program accepts, long
(``--lines``) and short (``-n``), by its own ``--help`` on this machine, must be known to
the grammar table.

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
# A dash and one character, standing alone (not ``-NUM``, ``[-]NUM``, ``a-b``, ``--x``).
SHORT = re.compile(r"(?<![\w\-\[=/])-([A-Za-z0-9?#@])(?![\w-])")
# Words --help shows after ``--`` that are not option names.
PROSE = frozenset({"help", "version"})
# (program, letter) -> why a ``-X`` its --help shows at the start of a line is not an
# option the grammar must list. Nothing else may be missing.
SHORT_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("cut", "M"): "the LIST syntax (``-M``: from the first to the M'th field), not an option",
    ("numfmt", "M"): "the FIELDS syntax (``-M``: from the first to the M'th field), not an option",
}


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


def option_heads(text: str) -> list[str]:
    """The part of each option line that names the options (before the description)."""
    return [re.split(r"\s{2,}|\t", line.strip(), maxsplit=1)[0] for line in option_lines(text)]


def advertised(text: str) -> set[str]:
    return {name for head in option_heads(text) for name in LONG.findall(head)}


def advertised_short(text: str) -> set[str]:
    return {letter for head in option_heads(text) for letter in SHORT.findall(head)}


def unknown_short(program: Program, letters: set[str]) -> list[str]:
    """Letters --help shows that the grammar does not list (``program.name`` is
    ``git log`` for a subcommand, as the exceptions are keyed)."""
    return [
        f"-{letter}"
        for letter in sorted(letters)
        if letter not in program.short and (program.name, letter) not in SHORT_EXCEPTIONS
    ]


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
    names, letters = advertised(text), advertised_short(text)
    if not names and not letters:
        pytest.skip(f"{name} --help lists no options here ({text.strip()[:80]!r})")
    missing = unknown(program, names) + unknown_short(program, letters)
    assert missing == [], (
        f"{name} accepts {missing}, which the grammar does not list: classify them in "
        "ketch_shell_kit/grammar/grammar.json (or, if --help shows something that is not an "
        "option, add it to the exceptions here with the reason)"
    )


GIT_SUBS = sorted(TABLE["git"].subcommands)


@pytest.mark.parametrize("sub", GIT_SUBS)
def test_every_long_option_of_a_git_subcommand_is_in_the_grammar(sub: str) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed on this machine")
    program = TABLE["git"].subcommands[sub]
    text = help_text(["git", sub, "-h"])
    names, letters = advertised(text), advertised_short(text)
    if not names and not letters:
        pytest.skip(f"git {sub} -h lists no options here")
    missing = unknown(program, names) + unknown_short(program, letters)
    assert missing == [], f"git {sub} accepts {missing}, which the grammar does not list"


def test_the_check_can_fail() -> None:
    """The control: an option the grammar does not list is reported."""
    program = TABLE["head"]
    assert unknown(program, {"lines", "bytes"}) == []
    assert unknown(program, {"lines", "exec-something"}) == ["--exec-something"]
    assert advertised("  -n, --lines=[-]NUM  print\n      --frobnicate  new\n") == {
        "lines",
        "frobnicate",
    }
    assert unknown_short(program, {"n", "c", "q"}) == []
    assert unknown_short(program, {"n", "Y"}) == ["-Y"]
    assert advertised_short(
        "  -n, --lines=[-]NUM  print\n  -NUM  same as -n NUM\n  -Y  new\n  -a-b  not one\n"
    ) == {"n", "Y"}
    assert unknown_short(TABLE["cut"], {"M", "f"}) == []  # an exception, with its reason


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
