"""The shell analyser on its own: every simple command, wrapper and redirection found,
and every construct it cannot follow reported as a problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from ketch_shell_kit import MAX_COMMANDS as MAX_PARTS
from ketch_shell_kit import MAX_DEPTH, analyse

WS = Path("/w/proj")


def argvs(command: str) -> list[list[str | None]]:
    analysis = analyse(command, WS)
    assert analysis.understood, analysis.problems
    return [[w.value for w in p.argv] for p in analysis.parts if p.kind == "command"]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git add . && git push", [["git", "add", "."], ["git", "push"]]),
        ("a; b || c | d & e\nf", [["a"], ["b"], ["c"], ["d"], ["e"], ["f"]]),
        ("a |& b", [["a"], ["b"]]),
        ("echo $(rm x) `id`", [["rm", "x"], ["id"], ["echo", None, None]]),
        ("diff <(ls) >(tee f)", [["ls"], ["tee", "f"], ["diff", "/dev/fd/63", "/dev/fd/63"]]),
        ("echo ${a:-$(rm x)}", [["rm", "x"], ["echo", None]]),
        ("cat <<EOF\n$(rm x)\nEOF", [["rm", "x"], ["cat"]]),
        ("cat <<'EOF'\n$(rm x)\nEOF", [["cat"]]),
        ("(cd sub && ls); { pwd; }", [["cd", "sub"], ["ls"], ["pwd"]]),
        ("if a; then b; elif c; then d; else e; fi", [["a"], ["b"], ["c"], ["d"], ["e"]]),
        ("while a; do b; done; until c; do d; done", [["a"], ["b"], ["c"], ["d"]]),
        ('for f in $(ls); do cat "$f"; done', [["ls"], ["cat", None]]),
        ("case $(id) in x) rm y;; esac", [["id"], ["rm", "y"]]),
        ("r\\m 'a b' \"c\\\"d\" $'\\x41'", [["rm", "a b", 'c"d', "A"]]),
        ("\"g\"it st'at'us", [["git", "status"]]),
        ("ls \\\n  -l # comment; rm x", [["ls", "-l"]]),
        ("echo a#b", [["echo", "a#b"]]),
        # ``{}`` is replaced by each file found: a word only known at run time
        (
            "find . -name x -exec rm -f {} \\; -print",
            [
                ["find", ".", "-name", "x", "-exec", "rm", "-f", "{}", ";", "-print"],
                ["rm", "-f", None],
            ],
        ),
    ],
)
def test_every_simple_command_is_found(command: str, expected: list[list[str | None]]) -> None:
    assert argvs(command) == expected


@pytest.mark.parametrize(
    ("command", "inner", "chain"),
    [
        (
            "timeout -s KILL 5 nice -n 3 rm x",
            ["rm", "x"],
            [["timeout", "-s", "KILL", "5"], ["nice", "-n", "3"]],
        ),
        ("env -i A=1 B=2 rm x", ["rm", "x"], [["env", "-i", "A=1", "B=2"]]),
        ("nohup stdbuf -oL rm x", ["rm", "x"], [["nohup"], ["stdbuf", "-oL"]]),
        ("time ionice -c3 rm x", ["rm", "x"], [["time"], ["ionice", "-c3"]]),
        ("command rm x", ["rm", "x"], [["command"]]),
        ("exec rm x", ["rm", "x"], [["exec"]]),
        ("xargs -0 -n1 rm", ["rm"], [["xargs", "-0", "-n1"]]),
        ("bash -lc 'rm x'", ["rm", "x"], [["bash", "-lc", "rm x"]]),
        ('sh -e -c "rm x" name', ["rm", "x"], [["sh", "-e", "-c", "rm x"]]),
        ("eval 'rm' x", ["rm", "x"], [["eval"]]),
        ("watch -n 1 rm x", ["rm", "x"], [["watch", "-n", "1"]]),
        ("sudo -u root -- rm x", ["rm", "x"], [["sudo", "-u", "root", "--"]]),
        ("su -c 'rm x'", ["rm", "x"], [["su", "-c", "rm x"]]),
        ("/usr/bin/env rm x", ["rm", "x"], [["/usr/bin/env"]]),
    ],
)
def test_wrappers_are_unwrapped(command: str, inner: list[str], chain: list[list[str]]) -> None:
    analysis = analyse(command, WS)
    assert analysis.understood, analysis.problems
    leaf = analysis.parts[-1]
    assert [w.value for w in leaf.argv] == inner
    assert [[w.value for w in wrapper] for wrapper in leaf.wrappers] == chain
    assert leaf.privileged == command.startswith(("sudo", "su "))


def test_env_assignments_and_extra_arguments_are_kept() -> None:
    part = analyse("env FOO=1 xargs grep x", WS).parts[-1]
    assert [w.value for w in part.argv] == ["grep", "x"] and part.extra_args
    part = analyse("LC_ALL=C FOO=$(id) sort f", WS).parts[-1]
    assert [(k, v.value) for k, v in part.assignments] == [("LC_ALL", "C"), ("FOO", None)]


def test_a_wrapper_given_as_a_workspace_path_is_not_unwrapped() -> None:
    part = analyse("./timeout 5 ls", WS).parts[0]
    assert [w.value for w in part.argv] == ["./timeout", "5", "ls"] and not part.wrappers


def test_redirections() -> None:
    found = [
        (r.op, r.target.value if r.target else None, r.writes, r.reads)
        for command in ("cmd > a >> b 2> c &> d < e >| g 2>&1 >&- 3<&0", "cmd <<< x >&h")
        for r in analyse(command, WS).redirects
    ]
    assert found == [
        (">", "a", True, False),
        (">>", "b", True, False),
        (">", "c", True, False),
        ("&>", "d", True, False),
        ("<", "e", False, True),
        (">|", "g", True, False),
        (">&", None, False, False),
        (">&-", None, False, False),
        ("<&", None, False, False),
        (">&", "h", True, False),
        ("<<<", None, False, False),
    ]
    assert analyse("{ ls; } > out; (pwd) 2>/dev/null", WS).redirects[0].target.value == "out"  # type: ignore[union-attr]


def test_cd_makes_every_later_path_relative_to_either_place() -> None:
    analysis = analyse("cd sub && cat x; cd /etc || true; cat y", WS)
    cats = [p for p in analysis.parts if p.name == "cat"]
    assert cats[0].cwds == (WS, WS / "sub")
    assert cats[1].cwds == (WS, WS / "sub", Path("/etc"))
    assert analyse("(cd /etc); cat x", WS).parts[-1].cwds == (
        WS,
    )  # a subshell's cd stays inside it
    assert analyse("bash -c 'cd /etc'; cat x", WS).parts[-1].cwds == (
        WS,
    )  # so does a child shell's
    assert analyse("eval 'cd /etc'; cat x", WS).parts[-1].cwds == (
        WS,
        Path("/etc"),
    )  # eval's does not
    assert (
        analyse("cd $D; cat x", WS).parts[-1].cwds == ()
    )  # unknown: relative paths cannot be placed
    assert analyse("cd; cat x", WS).parts[-1].cwds == (WS, Path.home())


def test_words() -> None:
    words = analyse("ls ~/x ~other/y *.py a\\*b {a,b} x{1..3} \"$HOME\" '$HOME'", WS).parts[0].args
    home = str(Path.home())
    assert [(w.value, w.pattern) for w in words] == [
        (f"{home}/x", None),
        (None, None),
        ("*.py", "*.py"),
        ("a*b", None),
        (None, None),
        (None, None),
        (None, None),
        ("$HOME", None),
    ]


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ('echo "unterminated', "does not parse"),
        ("ls )", "does not parse"),
        ("ls\r", "carriage return"),
        ("ls\u200b", "invisible"),
        ("ls\u00a0-l", "invisible"),
        ("echo $IFS", "$IFS"),
        ("IFS=x; ls", "$IFS"),
        ("$(echo rm) x", "only known at run time"),
        ("$CMD x", "only known at run time"),
        ("*.sh", "only known at run time"),
        ("f() { rm x; }; f", "function"),
        ("((x++))", "arithmetic"),
        ("echo $((x + 1))", "arithmetic"),
        ("[[ $x -eq 1 ]]", "arithmetic"),
        ("for ((i=0;i<3;i++)); do ls; done", "arithmetic"),
        ("a[$(rm x)]=1", "array element"),
        ("echo ${a[$i]}", "array element"),
        ("let x=1", "runs code"),
        ("trap 'rm x' EXIT", "runs code"),
        ("source ./env.sh", "runs code"),
        (". ./env.sh", "runs code"),
        ("coproc cat", "runs code"),
        ('eval "$X"', "only known at run time"),
        ('bash -c "$X"', "only known at run time"),
        ("echo rm x | bash", "standard input"),
        ("bash -s < script.sh", "standard input"),
        ("xargs -I{} sh -c 'echo {}'", "xargs -I"),
        ("sudo -s", "sudo -s"),
        ("env -S 'rm x'", "env -S"),
        ("PATH=/tmp ls", "PATH"),
        ("export LD_PRELOAD=/x.so", "LD_PRELOAD"),
        ("ls; do rm x; done", "syntax error in bash"),
        ('echo $"x"', "lone '$'"),
        ("ls$", "lone '$'"),
        ("export a$ b", "lone '$'"),
        ("\\ ls", "skipped"),
        ("if]ls; then :; fi", "reserved word"),
        ("!]ls", "reserved word"),
        ("{ls;}", "reserved word"),
        ("ls`ls`ls", "bash joins"),
        ("ls\n\\rm x", "split differently"),
        ("ls\\\nrm", "line continuation inside a word"),
        ("cat <> f", "does not parse"),  # tree-sitter-bash gaps fail closed
        ("cmd > a <<< x", "does not parse"),
        ("cat <<-EOF\n\t$(id)\n\tEOF", "command substitution the parser left as plain text"),
        ('bash -c \'bash -c "bash -c \\"bash -c ls\\""\'', None),
    ],
)
def test_what_it_cannot_follow_is_a_problem(command: str, problem: str | None) -> None:
    """Either the line is not understood at all, or a part says what it hides from the
    guards: both ask in every profile."""
    analysis = analyse(command, WS)
    if problem is None:
        assert analysis.understood  # nesting within the depth limit is followed
        return
    hidden = [why for part in analysis.parts for why in part.hidden]
    assert not analysis.understood or hidden
    assert any(problem in p for p in analysis.problems + hidden), (analysis.problems, hidden)


def test_nesting_has_a_depth_limit() -> None:
    assert analyse("eval " * MAX_DEPTH + "ls", WS).understood
    analysis = analyse("eval " * (MAX_DEPTH + 2) + "ls", WS)
    assert not analysis.understood and "nested" in analysis.problems[0]


def test_the_part_cap() -> None:
    assert not analyse("true && " * (MAX_PARTS - 1) + "ls", WS).too_complex
    assert analyse("true && " * MAX_PARTS + "ls", WS).too_complex


def test_the_self_check_catches_a_command_the_walker_skipped() -> None:
    """Every command in the tree must be walked; a walker that skips one (here: a
    deliberately broken one that ignores $(...)) yields a problem, never an allow."""
    from ketch_shell_kit.parse import Walker
    from ketch_shell_kit.words import Word

    class Skipping(Walker):
        def word(self, node):  # type: ignore[no-untyped-def]
            if node.type == "command_substitution":
                return Word(None, node.text.decode())
            return super().word(node)

    walker = Skipping("echo $(rm -rf x)", Path.home(), WS)
    walker.script("echo $(rm -rf x)", (WS,))
    assert [p.name for p in walker.analysis.parts] == ["echo"]
    assert any("not analysed" in p for p in walker.analysis.problems)
    assert analyse("echo $(rm -rf x)", WS).understood  # the real walker walks it
