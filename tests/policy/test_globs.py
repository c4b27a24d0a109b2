"""One glob dialect for rules and tools (issue 25 item 8): ``ketch_policy_kit.globs``.

The rule automaton speaks wcmatch's dialect under ``rule_glob_flags`` (checked here over
generated patterns and paths) in linear time (where wcmatch's backtracking regex does
not); name globs (tool names, secret and protected file names, environment variables)
read as they did with the standard library's ``fnmatch``, through wcmatch; and no other
module matches globs by its own means (``tests/meta/test_meta_globs.py``)."""

from __future__ import annotations

import fnmatch
import itertools
import random
import time

import pytest
from wcmatch import glob as wglob

from ketch_policy_kit.globs import (
    compile_glob,
    compile_tool_glob,
    match_name,
    names_matcher,
    rule_glob_flags,
)
from ketch_secret_kit.names import NOT_SECRET, SECRET_PATTERNS, secret_name

COMPONENTS = ["a", "b", ".a", "ab", "*", "?", "[ab]", "[!a]", "[^b]", "**", "a*", "*b", "*.x", "a?", "[a-b]*", ".*"]  # fmt: skip
NAMES = ["a", "b", ".a", "ab", "ba", "a.x", ".x", "bb", "aab", ".env"]


def test_rule_globs_are_wcmatchs_dialect() -> None:
    chance = random.Random(25)
    compared = 0
    for _ in range(20_000):
        pattern = "/" + "/".join(chance.choice(COMPONENTS) for _ in range(chance.randint(1, 4)))
        if not any(c in pattern for c in "*?["):
            continue  # a glob-free rule covers what is beneath it: the rules' own reading
        path = "/" + "/".join(chance.choice(NAMES) for _ in range(chance.randint(1, 5)))
        expected = wglob.globmatch(path, pattern, flags=rule_glob_flags())
        assert compile_glob(pattern).matches(path) == expected, (pattern, path)
        compared += 1
    assert compared > 10_000


def test_rule_globs_stay_linear_where_a_regex_would_not() -> None:
    # wcmatch's regex for this rule takes about a minute on such a path; the rule
    # automaton answers at once.
    pattern = "/" + "**/a/" * 3 + "b"
    path = "/a" * 1000
    started = time.perf_counter()
    assert compile_glob(pattern).matches(path) is False
    assert compile_glob(pattern).matches(path + "/b") is True
    assert time.perf_counter() - started < 0.5


NAME_PATTERNS = [
    "mcp__github__*", "mcp__*", "*", "web_*", "read_?ile", "[rw]*_file", "[!r]*",
    *SECRET_PATTERNS, *NOT_SECRET, ".gitconfig*", "AWS_*", "*_TOKEN", "*.py", "src/*",
]  # fmt: skip
# (No empty name: wcmatch's `*` needs a character, the standard library's does not; no
# tool, file or variable has an empty name.)
NAME_SUBJECTS = [
    "mcp__github__create_issue", "mcp__time__now", "web_fetch", "read_file", "write_file",
    "shell", ".env", ".env.local", "prod.env", ".env.example", "id_rsa", "id_rsa.pub",
    ".gitconfig", ".gitconfig.local", "AWS_SECRET", "GITHUB_TOKEN", "a.py", "src/a/b.py",
    ".hidden", "x.pem", "credentials.json", "ketch.key",
]  # fmt: skip


@pytest.mark.parametrize("pattern", NAME_PATTERNS)
def test_name_globs_read_as_before(pattern: str) -> None:
    for subject in NAME_SUBJECTS:
        assert match_name(subject, pattern) == fnmatch.fnmatchcase(subject, pattern), (
            pattern,
            subject,
        )


def test_many_name_globs_as_one_expression_match_whole_names() -> None:
    secret = names_matcher(SECRET_PATTERNS)
    for subject, pattern in itertools.product(NAME_SUBJECTS, [SECRET_PATTERNS]):
        assert secret(subject) == any(fnmatch.fnmatchcase(subject, p) for p in pattern)
    assert not secret(".env\n") and not names_matcher(NOT_SECRET)(".env.example\n")
    assert not names_matcher([])("anything")
    assert secret_name(".env") and secret_name("id_rsa") and not secret_name(".env.example")


def test_tool_globs_keep_their_flags() -> None:
    assert compile_tool_glob("src/**/*.py")("src/a/b/c.py")
    assert compile_tool_glob("src/**/*.py")("src/c.py")
    assert compile_tool_glob("*.{py,md}")("README.md")
    assert not compile_tool_glob("*.py")("a/b.py")
    assert compile_tool_glob("*.py", match_base=True)("a/b.py")
    assert not compile_tool_glob("*.py")(".hidden.py")  # tools leave dot files to `**/.*`
