"""The libraries on their own: getopt_long reading against the grammar table, bash's
glob dialect, the rule syntax's hostile sizes, recursive-read checks, and that the
guards never import the policy plugin."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ketch_policy_kit.rules import MAX_RULE_BYTES, RuleError, compile_rules, parse_rule
from ketch_shell_kit import analyse
from ketch_shell_kit.bashglob import expand
from ketch_shell_kit.getopt import parse
from ketch_shell_kit.grammar import TABLE
from ketch_shell_kit.reach import EVERYTHING, RG_DEFAULT, Walk, reach, rg_walk
from ketch_shell_kit.words import literal


def _parse(program: str, *words: str):  # noqa: ANN202
    return parse(TABLE[program], [literal(w) for w in words])


def _names(program: str, *words: str) -> list[tuple[str, str | None]]:
    return [(o.label, v.value if v else None) for o, v, _ in _parse(program, *words).options]


# --- getopt_long ------------------------------------------------------------------------------


def test_long_options_resolve_by_unique_prefix_like_getopt_long() -> None:
    assert _names("sort", "--ou=/x") == [("--output", "/x")]
    assert _names("sort", "--co=bash") == [("--compress-program", "bash")]
    assert _names("sort", "--outp", "/x") == [("--output", "/x")]
    assert _names("sed", "--i") == [("--in-place", None)]
    assert _names("git", "--no-pager") == [("--no-pager", None)]


def test_ambiguous_and_unknown_long_options_are_problems_not_guesses() -> None:
    assert "ambiguous" in _parse("sort", "--s", "x").problems[0]  # --sort, --stable
    assert "no option '--frobnicate'" in _parse("cat", "--frobnicate").problems[0]
    assert "takes no value" in _parse("cat", "--number=3").problems[0]
    assert _parse("rg", "--pr=x").problems  # ripgrep takes no abbreviations


def test_short_options_cluster_and_take_attached_or_next_values() -> None:
    assert _names("env", "-iu", "X", "rm") == [("--ignore-environment", None), ("--unset", "X")]
    assert _names("date", "-f.env") == [("--file", ".env")]
    assert _names("cp", "-rt", "/out", "src") == [
        ("--recursive", None),
        ("--target-directory", "/out"),
    ]
    assert _names("head", "-5") == [("-5", None)]  # the obsolete -NUM form


def test_double_dash_ends_options_and_wrappers_stop_at_their_command() -> None:
    parsed = _parse("rm", "--", "-rf")
    assert parsed.options == [] and [w.value for w in parsed.operands] == ["-rf"]
    timeout = _parse("timeout", "-s", "KILL", "5", "rm", "-rf", "x")
    assert [w.value for w in timeout.operands] == ["5", "rm", "-rf", "x"]
    grep = _parse("grep", "foo", "-r", "src")  # GNU permutes: -r after an operand is an option
    assert [o.label for o, _, _ in grep.options] == ["--recursive"]


def test_a_run_time_word_where_an_option_could_stand_is_reported() -> None:
    analysis = analyse('sort "$x" README.md', "/w", workspace="/w")
    [part] = analysis.parts
    assert not part.read_only and part.hidden, "sort has -o: the word could be a write"
    [echo] = analyse('echo "$x"', "/w", workspace="/w").parts
    assert echo.read_only


@pytest.mark.parametrize(
    ("command", "kind", "target"),
    [
        ("sort -o /x README.md", "write", "/x"),
        ("shuf -o /x README.md", "write", "/x"),
        ("cp -t /out a b", "write", "/out"),
        ("wc --files0-from=.env", "read", ".env"),
        ("git blame --contents=.env README.md", "read", ".env"),
        ("xargs -0 -a .env echo", "read", ".env"),
        ("/usr/bin/time -o out ls", "write", "out"),  # GNU time (bare, first: the keyword)
        ("command time -o out ls", "write", "out"),
        ("find . -fprint /x", "write", "/x"),
        ("sed -i s/a/b/ f", "write", "f"),
        ("dd if=.env of=/x", "write", "/x"),
        ("git show HEAD:.env", "read", ".env"),
        ("tee -a /x", "write", "/x"),
        ("ln -s .env x", "link", ".env"),
        ("mv .env x", "read", ".env"),  # renamed: its content is read under the new name
    ],
)
def test_the_grammar_names_what_each_command_reads_and_writes(
    command: str, kind: str, target: str
) -> None:
    analysis = analyse(command, "/w", workspace="/w")
    assert analysis.understood, analysis.problems
    uses = [(u.kind, u.word.value) for p in analysis.parts for u in p.uses]
    assert (kind, target) in uses, uses


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "cat README.md",
        "head -n 3 src/a.py",
        "wc -l src/a.py",
        "rg -n foo src",
        "grep -rn x src",
        "git log --oneline -3",
        "git show HEAD",
        "sed -n 1,5p f",
        "awk '{print $1}' f",
        "jq .name package.json",
        "sort -u f",
        "diff a b",
        "stat f",
        'echo "$HOME"',
    ],
)
def test_ordinary_reading_is_read_only_by_the_grammar(command: str, tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # git reads are proven in the workspace's own repository
    analysis = analyse(command, tmp_path, workspace=tmp_path)
    assert analysis.understood and all(p.read_only for p in analysis.parts), [
        (p.text, p.reasons) for p in analysis.parts
    ]


def test_set_is_proven_only_with_options_that_steer_nothing() -> None:
    assert analyse("set -euo pipefail; ls", "/w", workspace="/w").understood
    assert not analyse("set -k; ls LD_PRELOAD=/x.so", "/w", workspace="/w").understood
    assert not analyse("set -o posix", "/w", workspace="/w").understood


def test_a_relative_path_entry_makes_every_program_name_a_possible_workspace_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:.:/bin")
    [part] = analyse("ls", "/w", workspace="/w").parts
    assert not part.read_only and "relative entry" in part.reasons[0]
    [echo] = analyse("echo hi", "/w", workspace="/w").parts  # a builtin: PATH is not consulted
    assert echo.read_only


def test_unknown_programs_are_simply_not_proven() -> None:
    [part] = analyse("frobnicate --all", "/w", workspace="/w").parts
    assert not part.known and not part.read_only and not part.hidden


# --- bash's glob dialect ------------------------------------------------------------------------


@pytest.fixture
def globbed(tmp_path: Path) -> Path:
    for name in (".env", "env", "Readme", "a.py", "-rf"):
        (tmp_path / name).write_text("x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("x")
    return tmp_path


@pytest.mark.parametrize(
    ("pattern", "matches"),
    [
        (".[[:alpha:]]nv", [".env"]),  # Python's glob matches nothing here
        ("*", ["-rf", "Readme", "a.py", "env", "sub"]),  # dotfiles need an explicit dot
        (".*", [".env"]),  # never . or .. (globskipdots)
        ("?env", []),
        (".[!x]nv", [".env"]),
        (".[^x]nv", [".env"]),
        ("[[:upper:]]*", ["Readme"]),
        ("**/*.py", ["sub/b.py"]),  # ** is * without globstar
        ("[]a]*", ["a.py"]),
        ("*.nothing", []),
    ],
)
def test_globs_expand_as_bash_does(globbed: Path, pattern: str, matches: list[str]) -> None:
    assert expand(pattern, str(globbed)) == matches


def test_a_glob_that_expands_to_an_option_is_not_proven(globbed: Path) -> None:
    """A file named ``--files0-from=.env`` turns ``wc *`` into ``wc --files0-from=.env``."""
    (globbed / "--files0-from=.env").write_text("x")
    [part] = analyse("wc -l *", globbed, workspace=globbed).parts
    assert not part.read_only and part.hidden
    [safe] = analyse("wc -l ./*", globbed, workspace=globbed).parts
    assert safe.read_only, safe.reasons  # ./--files0-from=.env is a file name, not an option


def test_globs_bash_reads_differently_are_refused(globbed: Path) -> None:
    assert expand("[[=e=]]nv", str(globbed)) is None
    assert expand("[[:nosuchclass:]]", str(globbed)) is None


def test_a_glob_that_matches_a_secret_is_a_secret_read(globbed: Path) -> None:
    from ketch_shell_kit.paths import resolve_word

    [part] = analyse("cat .[[:alpha:]]nv", globbed, workspace=globbed).parts
    [use] = part.uses
    assert str(globbed / ".env") in (resolve_word(use.word, use.cwds) or [])


# --- rules: hostile sizes, linear time ------------------------------------------------------------


def test_a_rule_over_4_kib_is_refused_with_a_notice() -> None:
    with pytest.raises(RuleError, match="at most 4 KiB"):
        parse_rule("deny(" + "a" * MAX_RULE_BYTES + ")")
    started = time.perf_counter()
    compiled = compile_rules((), (), ("read(" + "*[" * 1_500_000 + ")",))  # a 3 MB deny rule
    assert time.perf_counter() - started < 0.5
    assert compiled.broken_restrictions and "4 KiB" in compiled.errors[0]


@pytest.mark.parametrize("body", ["*" * 2000, "*a" * 1000, "[" * 2000, "**/" * 650, "?*" * 1000])
def test_rule_globs_match_in_linear_time(body: str) -> None:
    rule = parse_rule(f"read(/{body}x)")
    path = "/" + "a" * 3000 + "/b" * 200
    started = time.perf_counter()
    rule.matches_path(
        "read_file", __import__("ketch.tools", fromlist=["Effect"]).Effect.READ, path, Path("/")
    )
    assert time.perf_counter() - started < 1.0


# --- recursive reads -------------------------------------------------------------------------------


def test_reach_finds_secrets_and_respects_each_programs_walk(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x")
    ws = tmp_path

    def found(walk: Walk, **kwargs: object) -> str | None:
        result = reach(str(ws), walk, workspace=ws, cwd=str(ws), **kwargs)  # type: ignore[arg-type]
        return None if result is None else result.kind + ":" + result.path

    assert found(EVERYTHING) is None
    (ws / ".env").write_text("K=1")
    assert found(EVERYTHING) == "secret:.env"
    assert found(RG_DEFAULT) is None  # rg's walk skips hidden files
    assert found(rg_walk([("--hidden", None)])) == "secret:.env"
    assert found(EVERYTHING, masked=True) is None  # the sandbox masks it
    (ws / "src" / "id_rsa").write_text("k")
    assert found(RG_DEFAULT) == "secret:src/id_rsa"
    many = ws / "many"
    many.mkdir()
    for index in range(10):
        (many / f"f{index}.txt").write_text("x")
    assert reach(str(many), EVERYTHING, workspace=ws, cwd=str(ws)) is None
    assert reach(str(many), EVERYTHING, workspace=ws, cwd=str(ws), limit=3).kind == "too-many"  # type: ignore[union-attr]


# --- the guards never need the policy plugin --------------------------------------------------------


def test_no_plugin_policy_imports_no_policy_module(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from ketch.kernel import Kernel\n"
        "k = Kernel.boot(cli_disabled=['policy'])\n"
        "k.configure()\n"
        "from ketch.cli import build_parser\n"
        "build_parser(k)\n"
        "import pathlib\n"
        "from ketch.policy import PermissionSnapshot, ProposedCall\n"
        "from ketch.tools import Access, Effect\n"
        "from ketch_guards.guards import vote\n"
        "ws = pathlib.Path.cwd()\n"
        "access = Access(effect=Effect.EXECUTE, target='rm -rf /etc', detail={'cwd': str(ws)})\n"
        "call = ProposedCall(id='c', tool='shell', input={}, effects=frozenset({Effect.EXECUTE}), mutating=True, accesses=(access,), plugin='shell')\n"
        "print(vote(call, PermissionSnapshot(mode='build', profile='full-access', workspace=ws)).decision)\n"
        "print(sorted(m for m in sys.modules if m == 'ketch_policy' or m.startswith('ketch_policy.')))\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    decision, modules = done.stdout.strip().splitlines()[-2:]
    assert decision == "ask"
    assert modules == "[]"
