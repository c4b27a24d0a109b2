"""awk programs are proven only when they provably name no file (issue 23, item 4).

The parser (ketch_shell_kit.grammar.awk) must find every way an awk program picks a
file or a command beyond its operands, in every spelling; ordinary one-liners must
still be proven. Where an awk is installed, the ordinary programs are also run for
real, to show the parser accepts programs awk accepts (and reads them the same way).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ketch_shell_kit import analyse
from ketch_shell_kit.grammar.awk import program_problems

ORDINARY = [
    "{print $1}",
    "NR>1 && $3 > 100 {s+=$3} END {print s}",
    "/foo/ {c++} END{print c+0}",
    "{n=length($0); if (n > max) max=n} END{print max}",
    '{a[$1]+=$2} END{for(k in a) printf "%s %d\\n", k, a[k]}',
    'BEGIN { FS=":" } { print $1 }',
    "{ sum += $NF } END { print sum/NR }",
    '{$1=""; print}',
    '{print NR": "$0}',
    '{ gsub(/foo/, "bar"); print }',
    "BEGIN { x = 1 } ; { print x }",
    '{ if ($1 == "a") print "yes"; else print "no" }',
    "{ print ($1 > 3) }",
    "{ getline; print }",
    "{ while ((getline line) > 0) n++ } END { print n+0 }",
    "{print substr($0, 1, 10)}",
    'BEGIN{OFS="\\t"} {$1=$1; print}',
    "NR==FNR{a[$1];next} $1 in a",
    '{ x = $1 ~ /a|b/ ? "y" : "n"; print x }',
    "{ print toupper(substr($1,1,1)) substr($1,2) }",
    "function add(a, b) { return a + b }\nBEGIN { print add(1, 2) }",
    'BEGIN { n = split("a b c", parts); for (i = 1; i <= n; i++) print parts[i] }',
    "BEGIN { for (k in ARGV) print ARGV[k] }",
    'BEGIN { print ENVIRON["HOME"] != "" }',
    "length > 72",
    "!seen[$0]++",
    'END { print NR > "/dev/stderr" }',
    "$1 > 3 { print }",
    "BEGIN { print length(ARGV) }",
]

# Each: a program that picks a file or a command by other means than its operands.
NAMES_A_FILE = [
    'BEGIN{ARGV[1]=".env"; ARGC=2} {print}',
    'BEGIN{ARGV[ARGC++]="x"}',
    "BEGIN{ARGC=3}",
    "BEGIN {ARGV[1]++}",
    "BEGIN{--ARGC}",
    'BEGIN{ARGV[1] = ENVIRON["HOME"] "/.ssh/id_rsa"; ARGC = 2}',
    'BEGIN{split(".env", ARGV)}',
    'BEGIN{split(".env x", ARGV, " "); ARGC = 3}',
    'BEGIN{sub(/a/, ".env", ARGV[1])}',
    'BEGIN{gsub(/^/, "../", ARGV[1])}',
    'function f(a){a[1]=".env"} BEGIN{f(ARGV)}',
    "BEGIN{getline ARGV[1]}",
    "BEGIN{getline ARGC}",
    "BEGIN { delete ARGV[1] }",
    "BEGIN { for (ARGV[1] in a) ; }",
    'BEGIN{SYMTAB["ARGV"][1]=".env"}',
    '{getline line < ".env"; print line}',
    "BEGIN { getline x < ARGV[1] }",
    'BEGIN { getline < "/etc/passwd" }',
    'BEGIN{while (("cat .env" | getline l) > 0) print l}',
    'BEGIN { "ls" | getline }',
    'BEGIN{ "date" |& getline d }',
    'BEGIN{system("id")}',
    'BEGIN { system("rm -f x") }',
    'BEGIN{close("x")}',
    '{print > "out"}',
    '{ print $1 >> "y" }',
    '{ printf("%s\\n", $1) > "x" }',
    "{ print $1 > $2 }",
    '{print | "sh"}',
    '{ c[$1]++ } END { for (w in c) print w, c[w] | "sort -rn" }',
    '@include "x"',
    '@load "readfile"',
    'BEGIN { f = "system"; @f("id") }',
    'BEGIN { bindtextdomain("."); print dcgettext("x") }',
    "{ print length / 2 }",  # division or a regex, depending on the awk
    "{print $1 /[/]/ }",
    'BEGIN { printf "a\nb" }',  # a newline in a string: not awk
]


@pytest.mark.parametrize("program", ORDINARY)
def test_ordinary_programs_are_proven(program: str) -> None:
    assert program_problems(program) == []


@pytest.mark.parametrize("program", NAMES_A_FILE)
def test_programs_that_pick_files_or_commands_are_not(program: str) -> None:
    assert program_problems(program), program


@pytest.mark.parametrize("spelling", ["awk", "gawk", "mawk", "nawk", "/usr/bin/awk", "busybox awk"])
def test_every_spelling_reads_the_program(tmp_path: Path, spelling: str) -> None:
    program = 'BEGIN{ARGV[1]=".env"; ARGC=2} {print}'
    command = f"{spelling} '{program}' README.md"
    analysis = analyse(command, tmp_path, workspace=tmp_path)
    assert not analysis.read_only or spelling.startswith("busybox"), analysis.parts
    if not spelling.startswith("busybox"):
        assert any("ARGV" in r for p in analysis.parts for r in p.reasons)
    ordinary = analyse(f"{spelling} '{{print $1}}' README.md", tmp_path, workspace=tmp_path)
    if not spelling.startswith("busybox"):
        assert ordinary.read_only, [p.reasons for p in ordinary.parts]


def test_gawk_source_option_is_read_too(tmp_path: Path) -> None:
    assert not analyse(
        "gawk -e 'BEGIN{ARGV[1]=\".env\"}' -e '{print}' x", tmp_path, workspace=tmp_path
    ).read_only
    assert analyse("gawk -e '{print $1}' x", tmp_path, workspace=tmp_path).read_only
    for option in ("-f prog.awk", "--include=lib", "-i lib", "-E prog.awk", "-l ext"):
        assert not analyse(f"gawk {option} x", tmp_path, workspace=tmp_path).read_only, option


AWKS = [name for name in ("mawk", "gawk", "original-awk", "busybox") if shutil.which(name)]


@pytest.mark.skipif(not AWKS, reason="no awk installed")
@pytest.mark.parametrize("program", ORDINARY)
def test_the_installed_awks_accept_what_the_parser_accepts(tmp_path: Path, program: str) -> None:
    """The parser proves nothing awk would reject: each ordinary program runs, on a
    plain input file, and opens nothing but it (stderr shows no error)."""
    data = tmp_path / "data.txt"
    data.write_text("a 1 2\nb 150 300\na 3 4\n", encoding="utf-8")
    for awk in AWKS:
        argv = [awk, "awk"] if awk == "busybox" else [awk]
        result = subprocess.run(
            [*argv, program, str(data), str(data)],
            capture_output=True,
            text=True,
            timeout=10,
            cwd=tmp_path,
            check=False,
        )
        assert result.returncode == 0 and "syntax" not in result.stderr, (awk, result.stderr)
