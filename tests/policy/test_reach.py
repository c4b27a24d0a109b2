"""A recursive reader is proven by what *that* program would read (issue 23, item 4).

The walks of :mod:`ketch_shell_kit.reach` are checked against the programs themselves:
for a tree with hidden, ignored and whitelisted files, nested ignore files and
symlinks (to a directory outside, to a secret), the set of files each walk enumerates
must contain every file the real ``rg``, ``grep`` and ``git grep`` read with the same
options (it may hold more -- narrowing ketch cannot read exactly is not applied --
never less).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ketch_shell_kit import analyse
from ketch_shell_kit.reach import MAX_ENTRIES, entries_of, git_grep_walk, grep_walk, reach, rg_walk

GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "id_rsa").write_text("NEEDLE key\n")
    ws = tmp_path / "ws"
    (ws / "src" / "deep").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("NEEDLE a\n")
    (ws / "src" / "deep" / "b.txt").write_text("NEEDLE b\n")
    (ws / ".env").write_text("NEEDLE=1\n")
    (ws / ".hidden").mkdir()
    (ws / ".hidden" / "c.txt").write_text("NEEDLE c\n")
    (ws / "build").mkdir()
    (ws / "build" / "out.txt").write_text("NEEDLE out\n")
    (ws / "env.bak").write_text("NEEDLE=2\n")
    (ws / ".gitignore").write_text(".env\nbuild/\nenv.bak\n")
    (ws / "sub").mkdir()
    (ws / "sub" / ".ignore").write_text("!secret.txt\n")
    (ws / "sub" / "secret.txt").write_text("NEEDLE s\n")
    (ws / "linked").symlink_to(outside, target_is_directory=True)
    (ws / "to-env").symlink_to(ws / ".env")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True, env=GIT_ENV)
    subprocess.run(["git", "add", "src", ".gitignore"], cwd=ws, check=True, env=GIT_ENV)
    return ws


def _walked(ws: Path, walk: object) -> set[str]:
    found = entries_of(str(ws), walk, cwd=str(ws), repository=str(ws))  # type: ignore[arg-type]
    assert found is not None
    return {os.path.relpath(p, ws) for p, _ in found}


def _listed(ws: Path, argv: list[str]) -> set[str]:
    result = subprocess.run(argv, cwd=ws, capture_output=True, text=True, env=GIT_ENV, check=False)
    return {line.removeprefix("./") for line in result.stdout.splitlines() if line}


RG_OPTIONS = [
    [],
    ["--hidden"],
    ["-u"],
    ["-uu"],
    ["--no-ignore"],
    ["-g", ".env"],
    ["--iglob", ".ENV"],
    ["-g", "*.txt"],
    ["-g", "!src"],
    ["-L"],
    ["--no-ignore-vcs"],
    ["--max-depth", "1"],
]


@pytest.mark.skipif(shutil.which("rg") is None, reason="rg is not installed")
@pytest.mark.parametrize("options", RG_OPTIONS, ids=[" ".join(o) or "plain" for o in RG_OPTIONS])
def test_rg_walk_covers_what_rg_reads(tree: Path, options: list[str]) -> None:
    real = _listed(tree, ["rg", "--no-config", "-l", "NEEDLE", *options])
    pairs: list[tuple[str, str | None]] = []
    index = 0
    long = {"-g": "--glob", "-u": "--unrestricted", "-L": "--follow"}
    while index < len(options):
        option = options[index]
        if option == "-uu":
            pairs += [("--unrestricted", None)] * 2
        elif option in ("-g", "--iglob", "--max-depth"):
            pairs.append((long.get(option, option), options[index + 1]))
            index += 1
        else:
            pairs.append((long.get(option, option), None))
        index += 1
    walked = _walked(tree, rg_walk(pairs))
    assert real <= walked, (options, real - walked)


GREP_OPTIONS = [
    ["-r"],
    ["-R"],
    ["-r", "--include=*.txt"],
    ["-r", "--exclude-dir=src"],
    ["-R", "--exclude=*.py"],
]


@pytest.mark.parametrize("options", GREP_OPTIONS, ids=[" ".join(o) for o in GREP_OPTIONS])
def test_grep_walk_covers_what_grep_reads(tree: Path, options: list[str]) -> None:
    real = _listed(tree, ["grep", "-l", *options, "NEEDLE", "."])
    pairs: list[tuple[str, str | None]] = []
    for option in options:
        if option == "-R":
            pairs.append(("--dereference-recursive", None))
        elif option.startswith("--"):
            name, _, value = option.partition("=")
            pairs.append((name, value))
    walked = {p for p in _walked(tree, grep_walk(pairs))}
    # grep -R names files under the symlink by the link's path; the walk resolves them
    assert real <= walked, (options, real - walked)


GIT_GREP = [
    [],
    ["--untracked"],
    ["--untracked", "--no-exclude-standard"],
    ["--no-index"],
    ["--no-index", "--exclude-standard"],
]


@pytest.mark.parametrize("options", GIT_GREP, ids=[" ".join(o) or "tracked" for o in GIT_GREP])
def test_git_grep_walk_covers_what_git_grep_reads(tree: Path, options: list[str]) -> None:
    real = _listed(tree, ["git", "grep", "-l", *options, "NEEDLE"])
    walked = _walked(tree, git_grep_walk([(o, None) for o in options]))
    assert real <= walked, (options, real - walked)


def test_the_proof_asks_where_the_walk_finds_a_secret_or_leaves(tree: Path) -> None:
    ws = tree

    def proven(command: str) -> bool:
        analysis = analyse(command, ws, workspace=ws)
        for part in analysis.parts:
            for use in part.uses:
                if use.kind in ("tree", "vtree"):
                    found = reach(
                        str(ws / use.word.value) if use.word.value != "." else str(ws),
                        use.walk,
                        workspace=ws,
                        cwd=str(ws),
                    )  # type: ignore[arg-type]
                    if found is not None:
                        return False
        return analysis.read_only

    assert not proven("rg NEEDLE")  # sub/secret.txt: a secret by its name, and not ignored
    assert not proven("rg -g .env NEEDLE")
    assert not proven("rg -L NEEDLE")  # follows linked/ out of the workspace
    assert not proven("grep -R NEEDLE .")
    assert not proven("grep -r NEEDLE .")  # .env is not hidden from grep
    assert proven("grep -rn NEEDLE src")
    assert proven("rg -n NEEDLE src")
    assert not proven("git grep --no-index NEEDLE")
    assert not proven("git grep --untracked --no-exclude-standard NEEDLE")
    assert proven("git grep NEEDLE")


def test_a_whitelist_written_earlier_in_any_ignore_file_counts(tree: Path) -> None:
    found = reach(str(tree), rg_walk([]), workspace=tree, cwd=str(tree))
    first = found.path if found else None
    (tree / ".ignore").write_text("!.env\n")
    found = reach(str(tree), rg_walk([]), workspace=tree, cwd=str(tree))
    assert found is not None and found.kind == "secret" and found.path in (".env", first)


def test_the_walk_is_capped(tree: Path) -> None:
    many = tree / "src" / "many"
    many.mkdir()
    for index in range(30):
        (many / f"f{index}").write_text("x")
    found = reach(str(tree / "src"), grep_walk([]), workspace=tree, cwd=str(tree), limit=10)
    assert found is not None and found.kind == "too-many"
    assert MAX_ENTRIES >= 10_000


def test_a_walk_that_cannot_be_made_asks_and_never_raises(tree: Path) -> None:
    missing = rg_walk([("--ignore-file", "no/such/file")])
    assert reach(str(tree / "src"), missing, workspace=tree, cwd=str(tree)) is None
    gone = reach(str(tree / "nowhere"), rg_walk([]), workspace=tree, cwd=str(tree))
    assert gone is None or gone.kind == "too-many"
