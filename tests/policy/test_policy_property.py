"""Property: composing commands never launders a dangerous part.

Commands are built from safe and dangerous parts with every separator and nesting
form the analyser knows. For every profile: a composition is allowed only if each
part alone is allowed -- so no composition containing a part that is not allowed on
its own (a dangerous part) is ever allowed.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ketch_shell_kit import analyse
from tests.policy.policy_kit import combined, make_workspace, shell_call, snapshot

SAFE = [
    "ls",
    "git --no-optional-locks status",
    "cat README.md",
    "echo hi",
    "grep -rn foo src",
    "wc -l src/a.py",
    "head -n 3 README.md",
    "pwd",
    "git log -1",
]
DANGEROUS = [
    "rm -rf build",
    "curl http://evil.example",
    "git push",
    "sed -i s/a/b/ README.md",
    "find . -delete",
    "echo x > .git/hooks/pre-commit",
    "python -c 'import os'",
    "chmod 777 src",
    "rg --pre ./x.sh foo",
    "awk 'BEGIN{system(\"id\")}'",
    "git -c core.pager=sh log",
    "cat .env",
    "sudo ls",
    "dd if=README.md of=/tmp/x",
    "echo x > ~/.bashrc",
    "cat /etc/passwd",
]
RULES = {"deny": ["shell(curl:*)", "shell(git push:*)"]}
SEPARATORS = [" ; ", ";", " && ", "&&", " || ", " | ", "|", " |& ", " & ", "\n"]
NESTINGS: dict[str, Callable[[str], str]] = {
    "command substitution": lambda x: f"echo $({x})",
    "quoted substitution": lambda x: f'echo "$({x})"',
    "backticks": lambda x: f"echo `{x}`",
    "process substitution": lambda x: f"diff <({x}) README.md",
    "default expansion": lambda x: f"echo ${{v:-$({x})}}",
    "subshell": lambda x: f"({x})",
    "group": lambda x: f"{{ {x}; }}",
    "heredoc": lambda x: f"{{ cat <<EOF\n$({x})\nEOF\n}}",
    "bash -c": lambda x: f"bash -c {shlex.quote(x)}",
    "sh -c": lambda x: f"sh -c {shlex.quote(x)}",
    "eval": lambda x: f"eval {shlex.quote(x)}",
    "if": lambda x: f"if {x}; then true; fi",
    "while": lambda x: f"while {x}; do break; done",
    "for": lambda x: f"for i in a; do {x}; done",
    "case": lambda x: f"case a in a) {x};; esac",
    "negation": lambda x: f"! {x}",
    "timeout": lambda x: f"timeout 5 {x}",
    "nice": lambda x: f"nice -n 5 {x}",
    "env": lambda x: f"env TERM=dumb {x}",
}
PROFILES = [("manual", False), ("assisted", False), ("full-access", False), ("assisted", True)]

Composed = tuple[str, frozenset[str]]


def _join(items: tuple[Composed, str, Composed]) -> Composed:
    (left, a), sep, (right, b) = items
    return f"{left}{sep}{right}", a | b


def _nest(items: tuple[str, Composed]) -> Composed:
    name, (text, parts) = items
    if name == "backticks" and "`" in text:
        name = "command substitution"
    return NESTINGS[name](text), parts


leaves = st.sampled_from(SAFE + DANGEROUS).map(lambda c: (c, frozenset({c})))
commands = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.tuples(children, st.sampled_from(SEPARATORS), children).map(_join),
        st.tuples(st.sampled_from(sorted(NESTINGS)), children).map(_nest),
    ),
    max_leaves=6,
)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_workspace(tmp_path_factory.mktemp("property"))


def _allowed(command: str, ws: Path, profile: str, sandboxed: bool) -> bool:
    snap = snapshot(ws, profile, rules=RULES, sandboxed=sandboxed)
    return combined(shell_call(command, ws), snap).decision == "allow"


@pytest.fixture(scope="module")
def alone(workspace: Path) -> dict[tuple[str, str, bool], bool]:
    return {
        (part, p, s): _allowed(part, workspace, p, s)
        for part in SAFE + DANGEROUS
        for p, s in PROFILES
    }


def test_every_dangerous_part_alone_is_not_allowed_in_manual_or_assisted(
    workspace: Path, alone: dict[tuple[str, str, bool], bool]
) -> None:
    for part in DANGEROUS:
        assert not alone[(part, "manual", False)], part
        assert not alone[(part, "assisted", False)], part
    for part in SAFE:
        assert alone[(part, "assisted", False)], part  # else the property below would be vacuous


@pytest.mark.parametrize("form", sorted(NESTINGS))
def test_each_nesting_form_is_understood_so_the_property_is_not_vacuous(
    workspace: Path, form: str
) -> None:
    text = NESTINGS[form]("git --no-optional-locks status")
    assert analyse(text, workspace).understood, text
    assert _allowed(text, workspace, "assisted", False), text


@pytest.mark.parametrize("separator", SEPARATORS)
def test_each_separator_is_understood(workspace: Path, separator: str) -> None:
    text = f"ls{separator}git log -1"
    assert analyse(text, workspace).understood
    assert _allowed(text, workspace, "assisted", False)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(composed=commands)
def test_no_composition_is_allowed_unless_every_part_is(
    workspace: Path, alone: dict[tuple[str, str, bool], bool], composed: Composed
) -> None:
    text, parts = composed
    for profile, sandboxed in PROFILES:
        if _allowed(text, workspace, profile, sandboxed):
            refused = [p for p in parts if not alone[(p, profile, sandboxed)]]
            assert refused == [], (
                f"{profile}{' (sandboxed)' if sandboxed else ''} allowed {text!r} containing {refused}"
            )
