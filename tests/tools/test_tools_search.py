"""grep: ripgrep and the Python engine give the same output; hostile patterns stay patterns."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

HAVE_RG = shutil.which("rg") is not None
ENGINES = [
    pytest.param(
        "ripgrep",
        marks=pytest.mark.skipif(
            not HAVE_RG, reason="ripgrep (rg) is not installed; .ci/run installs it"
        ),
    ),
    "python",
]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    files = {
        "src/a.py": "import os\n\ndef foo():\n    return 1\n\n\ndef bar():\n    return foo()\n",
        "src/b.py": "-foo is a flag\nFOO upper\n",
        "src/deep/c.txt": "foo in text\n",
        "docs/readme.md": "nothing here\n",
        "vendor/lib.py": "def foo(): pass\n",
        ".gitignore": "vendor/\n",
        ".env": "API_KEY=foo-secret-value\n",
        ".env.example": "API_KEY=foo-placeholder\n",
        "a.txt": "line with foo\n",
    }
    for rel, text in files.items():
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (ws / "blob.bin").write_bytes(b"\x00\x01foo\x00")
    outside = tmp_path / "outside.txt"
    outside.write_text("foo outside the workspace\n")
    os.symlink(outside, ws / "link.txt")
    return ws


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_finds_matches_with_context_and_respects_gitignore(
    tools, repo: Path, engine: str
) -> None:
    session = tools(settings={"grep": {"engine": engine}})
    result = session.call("grep", {"pattern": "foo", "context": 1})
    assert result.ok
    out = result.output
    assert (
        "src/a.py:3:def foo():" in out and "src/a.py-4-    return 1" in out and "src/a.py-2-" in out
    )
    assert "src/a.py:8:    return foo()" in out
    assert "src/b.py:1:-foo is a flag" in out
    assert "src/deep/c.txt:1:foo in text" in out
    assert "vendor" not in out  # .gitignore
    assert "blob.bin" not in out  # binary
    assert "outside the workspace" not in out  # a symlink out is never followed
    assert "foo-secret-value" not in out  # .env is a secret
    assert ".env.example:1:API_KEY=foo-placeholder" in out
    assert "[.env also matches but is not shown" in out
    assert "\n--\n" in out


@pytest.mark.parametrize("engine", ENGINES)
def test_pattern_starting_with_dash_is_a_pattern(tools, repo: Path, engine: str) -> None:
    session = tools(settings={"grep": {"engine": engine}})
    result = session.call("grep", {"pattern": "-foo"})
    assert result.ok and result.output.splitlines() == ["src/b.py:1:-foo is a flag"]


@pytest.mark.parametrize("engine", ENGINES)
def test_pre_option_as_pattern_runs_nothing(tools, repo: Path, engine: str) -> None:
    session = tools(settings={"grep": {"engine": engine}})
    marker = repo / "pwned"
    script = repo / "x.sh"
    script.write_text(f'#!/bin/sh\ntouch {marker}\ncat "$1"\n')
    script.chmod(0o755)
    for pattern in ("--pre=./x.sh", "--pre", "-z"):
        result = session.call("grep", {"pattern": pattern, "path": "."})
        assert result.ok, result.output
    hostile_glob = session.call("grep", {"pattern": "foo", "glob": "--pre=./x.sh"})
    assert hostile_glob.ok
    assert not marker.exists()
    (repo / "notes.txt").write_text("use --pre=./x.sh carefully\n")
    found = session.call("grep", {"pattern": "--pre=./x.sh"})
    assert "notes.txt:1:use --pre=./x.sh carefully" in found.output
    assert not marker.exists()


@pytest.mark.parametrize("engine", ENGINES)
def test_glob_filter_files_only_and_ignore_case(tools, repo: Path, engine: str) -> None:
    session = tools(settings={"grep": {"engine": engine}})
    py = session.call("grep", {"pattern": "foo", "glob": "*.py", "files_only": True})
    assert py.output.splitlines() == ["src/a.py", "src/b.py"]
    sub = session.call("grep", {"pattern": "foo", "glob": "src/deep/*"})
    assert sub.output.splitlines() == ["src/deep/c.txt:1:foo in text"]
    upper = session.call("grep", {"pattern": "^foo upper", "ignore_case": True, "path": "src"})
    assert upper.output.splitlines() == ["src/b.py:2:FOO upper"]
    literal = session.call("grep", {"pattern": "return foo()", "literal": True})
    assert literal.output.splitlines() == ["src/a.py:8:    return foo()"]


@pytest.mark.parametrize("engine", ENGINES)
def test_result_cap_and_long_lines(tools, tmp_path: Path, engine: str) -> None:
    session = tools(settings={"grep": {"engine": engine, "max_results": 5, "max_line_chars": 50}})
    (session.workspace / "many.txt").write_text("".join(f"hit {n}\n" for n in range(100)))
    (session.workspace / "wide.txt").write_text("hit " + "w" * 1000 + "\n")
    result = session.call("grep", {"pattern": "hit", "path": "many.txt"})
    assert len([line for line in result.output.splitlines() if line.startswith("many.txt:")]) == 5
    assert "showing the first 5 matches" in result.output
    wide = session.call("grep", {"pattern": "hit", "path": "wide.txt"})
    assert "more characters]" in wide.output and len(wide.output) < 200


@pytest.mark.parametrize("engine", ENGINES)
def test_invalid_regex_is_a_clear_error(tools, repo: Path, engine: str) -> None:
    session = tools(settings={"grep": {"engine": engine}})
    result = session.call("grep", {"pattern": "(unclosed"})
    assert (
        not result.ok
        and "invalid regular expression" in result.output
        and "literal" in result.output
    )


@pytest.mark.skipif(not HAVE_RG, reason="ripgrep (rg) is not installed")
def test_both_engines_give_identical_output(tmp_path: Path, repo: Path) -> None:
    from ketch_tools_testkit import make_session

    outputs = {}
    for engine in ("ripgrep", "python"):
        session = make_session(tmp_path, settings={"grep": {"engine": engine}})
        outputs[engine] = [
            session.call("grep", query).output
            for query in (
                {"pattern": "foo", "context": 2},
                {"pattern": "return", "files_only": True},
                {"pattern": "o+", "path": "src"},
                {"pattern": "nothing matches this"},
            )
        ]
    assert outputs["ripgrep"] == outputs["python"]


def test_grep_path_outside_is_declared(tools, repo: Path, tmp_path: Path) -> None:
    from ketch_tools_testkit import Recorder

    recorder = Recorder(answer=False)
    session = tools(approver=recorder)
    result = session.call("grep", {"pattern": "foo", "path": "../outside.txt"})
    assert not result.ok
    assert recorder.targets == [str((tmp_path / "outside.txt").resolve())]


def test_rg_config_in_environment_is_ignored(
    tools, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not HAVE_RG:
        pytest.skip("ripgrep (rg) is not installed")
    marker = repo / "pwned"
    script = repo / "pre.sh"
    script.write_text(f'#!/bin/sh\ntouch {marker}\ncat "$1"\n')
    script.chmod(0o755)
    config = repo / "rgrc"
    config.write_text(f"--pre={script}\n")
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(config))
    session = tools(settings={"grep": {"engine": "ripgrep"}})
    assert session.call("grep", {"pattern": "foo"}).ok
    assert not marker.exists()
