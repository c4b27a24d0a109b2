"""list_dir and glob: .gitignore respected, .git hidden, symlinks never followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for rel, text in {
        "README.md": "# r\n",
        "src/app.py": "x\n",
        "src/util/helpers.py": "y\n",
        "src/util/data.json": "{}\n",
        "src/util/.gitignore": "generated.py\n",
        "src/util/generated.py": "z\n",
        "tests/test_app.py": "t\n",
        "build/out.py": "o\n",
        "debug.log": "log\n",
        ".github/workflows/ci.yml": "on: push\n",
        ".git/config": "[core]\n",
        ".gitignore": "build/\n*.log\n",
    }.items():
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "stolen.py").write_text("s\n")
    os.symlink(outside, ws / "linked")
    return ws


def test_list_dir_shows_dirs_files_sizes_and_hides_ignored(tools, tree: Path) -> None:
    session = tools()
    result = session.call("list_dir", {})
    assert result.ok
    lines = result.output.splitlines()
    assert lines[0].startswith("./ (")
    assert ".github/" in lines and "src/" in lines and "tests/" in lines
    assert "build/" not in lines and not any(line.startswith("debug.log") for line in lines)
    assert ".git/" not in lines
    assert any(line.startswith("README.md  (") for line in lines)
    assert any(line.startswith("linked -> ") for line in lines)
    assert "[2 entries ignored by .gitignore not shown]" in result.output
    sub = session.call("list_dir", {"path": "src/util"})
    assert "generated.py" not in sub.output and "helpers.py" in sub.output


def test_list_dir_caps_entries(tools, tmp_path: Path) -> None:
    session = tools(settings={"list_dir": {"max_entries": 10}})
    for n in range(25):
        (session.workspace / f"f{n:02d}.txt").write_text("x")
    result = session.call("list_dir", {})
    assert "[15 more entries not shown" in result.output


def test_glob_respects_gitignore_and_does_not_follow_symlinks(tools, tree: Path) -> None:
    session = tools()
    result = session.call("glob", {"pattern": "**/*.py"})
    assert result.ok
    assert result.output.splitlines() == ["src/app.py", "src/util/helpers.py", "tests/test_app.py"]


def test_glob_literal_prefix_braces_and_dotfiles(tools, tree: Path) -> None:
    session = tools()
    assert session.call("glob", {"pattern": "src/*.py"}).output.splitlines() == ["src/app.py"]
    assert session.call("glob", {"pattern": "src/**/*.{py,json}"}).output.splitlines() == [
        "src/app.py",
        "src/util/data.json",
        "src/util/helpers.py",
    ]
    assert session.call("glob", {"pattern": "*.yml"}).output.startswith("No files match")
    assert session.call("glob", {"pattern": ".github/**/*.yml"}).output.splitlines() == [
        ".github/workflows/ci.yml"
    ]
    assert session.call("glob", {"pattern": "*.py", "path": "tests"}).output.splitlines() == [
        "tests/test_app.py"
    ]
    # A literal prefix that is a symlink out of the workspace is not walked either.
    assert "stolen" not in session.call("glob", {"pattern": "linked/*.py"}).output


def test_glob_rejects_escaping_patterns(tools, tree: Path) -> None:
    session = tools()
    for pattern in ("../*", "/etc/*", "src/../../x"):
        result = session.call("glob", {"pattern": pattern})
        assert not result.ok and "Invalid input" in result.output


def test_glob_caps_results(tools) -> None:
    session = tools(settings={"glob": {"max_results": 10}})
    for n in range(30):
        (session.workspace / f"m{n:02d}.md").write_text("x")
    result = session.call("glob", {"pattern": "*.md"})
    assert len(result.output.splitlines()) == 11 and "[20 more matches not shown" in result.output


def test_list_dir_and_glob_on_missing_or_file(tools, tree: Path) -> None:
    session = tools()
    assert "does not exist" in session.call("list_dir", {"path": "nope"}).output
    assert "is a file" in session.call("glob", {"pattern": "*", "path": "README.md"}).output
