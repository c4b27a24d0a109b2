"""ketch-git's tests, written with ketch's plugin author's kit.

The fixtures ``ketch_harness`` and ``ketch_workspace`` come from the ``ketch`` pytest
plugin that ``pip install ketch`` registers: nothing to import or configure. Each test
drives a real turn: the scripted provider proposes a tool call, the kernel validates
it, asks the policy (the guards) and the approver, runs the tool against a real git
repository, and feeds the result back.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ketch.testing import Harness, approve_all, call, deny_all, text

import ketch_git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

GIT_IDENTITY = [
    "-c",
    "user.name=Ada Lovelace",
    "-c",
    "user.email=ada@example.com",
    "-c",
    "commit.gpgsign=false",
]


def git(ws: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.run(
        ["git", *GIT_IDENTITY, *args], cwd=ws, env=env, capture_output=True, text=True, check=True
    )
    return proc.stdout


@pytest.fixture
def repo(ketch_workspace: Path) -> Path:
    """A repository with two commits, one modified file and one untracked file."""
    ws = ketch_workspace
    git(ws, "init", "-q", "-b", "main")
    (ws / "app.py").write_text("def main():\n    return 1\n")
    git(ws, "add", "app.py")
    git(ws, "commit", "-q", "-m", "Add app")
    (ws / "README.md").write_text("# demo\n")
    git(ws, "add", "README.md")
    git(ws, "commit", "-q", "-m", "Add readme")
    (ws / "app.py").write_text("def main():\n    return 2\n")
    (ws / "notes.txt").write_text("todo\n")
    return ws


def run_tool(
    make: Callable[..., Harness], name: str, args: dict[str, Any] | None = None, **kw: Any
) -> tuple[Harness, Any]:
    """One turn in which the model calls ``name`` once; returns the harness and the result event."""
    approver = kw.pop("approver", approve_all)
    harness = make(
        script=[call(name, args or {}), text("done")],
        plugins=[("git", ketch_git)],
        bundled=["guards"],
        **kw,
    )
    end = harness.run(f"run {name}", approver=approver)
    assert end.stop_reason == "end_turn"
    [result] = harness.of_type("tool_result")
    return harness, result


def test_status_shows_branch_and_changes(ketch_harness: Callable[..., Harness], repo: Path) -> None:
    _, result = run_tool(ketch_harness, "git_status")
    assert result.ok
    lines = result.output.splitlines()
    assert lines[0] == "## main"
    assert " M app.py" in lines and "?? notes.txt" in lines


def test_status_of_a_clean_tree_says_so(ketch_harness: Callable[..., Harness], repo: Path) -> None:
    git(repo, "checkout", "-q", "--", "app.py")
    (repo / "notes.txt").unlink()
    _, result = run_tool(ketch_harness, "git_status")
    assert result.output == "## main\n(working tree clean)"


def test_diff_unstaged_staged_and_stat(ketch_harness: Callable[..., Harness], repo: Path) -> None:
    _, unstaged = run_tool(ketch_harness, "git_diff")
    assert "-    return 1" in unstaged.output and "+    return 2" in unstaged.output
    _, staged = run_tool(ketch_harness, "git_diff", {"staged": True})
    assert staged.output == "(no differences)"
    git(repo, "add", "app.py")
    _, staged = run_tool(ketch_harness, "git_diff", {"staged": True, "stat": True})
    assert "app.py | 2 +-" in staged.output and "1 file changed" in staged.output


def test_diff_against_a_range_and_paths(ketch_harness: Callable[..., Harness], repo: Path) -> None:
    _, result = run_tool(
        ketch_harness, "git_diff", {"revision": "HEAD~1..HEAD", "paths": ["README.md"]}
    )
    assert "+# demo" in result.output and "app.py" not in result.output


def test_log_is_newest_first_and_bounded(ketch_harness: Callable[..., Harness], repo: Path) -> None:
    _, result = run_tool(ketch_harness, "git_log", {"max_count": 1})
    assert "Add readme" in result.output and "Add app" not in result.output
    assert "Ada Lovelace" in result.output
    _, result = run_tool(ketch_harness, "git_log", {"paths": ["app.py"], "patch": True})
    assert "Add app" in result.output and "Add readme" not in result.output
    assert "+    return 1" in result.output


def test_show_a_commit_and_a_file_at_a_revision(
    ketch_harness: Callable[..., Harness], repo: Path
) -> None:
    _, commit = run_tool(ketch_harness, "git_show", {"revision": "HEAD~1"})
    assert "Add app" in commit.output and "+def main():" in commit.output
    _, old_file = run_tool(ketch_harness, "git_show", {"revision": "HEAD", "path": "app.py"})
    assert old_file.output == "def main():\n    return 1"


def test_blame_a_line_range(ketch_harness: Callable[..., Harness], repo: Path) -> None:
    _, result = run_tool(
        ketch_harness, "git_blame", {"path": "README.md", "start_line": 1, "end_line": 1}
    )
    assert "Ada Lovelace" in result.output and "# demo" in result.output


def test_tools_are_read_only_and_offered_in_plan_mode(
    ketch_harness: Callable[..., Harness], repo: Path
) -> None:
    harness, _ = run_tool(ketch_harness, "git_status", settings={"mode": "plan"})
    offered = {spec.name for spec in harness.provider.requests[0].tools}
    assert {"git_status", "git_diff", "git_log", "git_show", "git_blame"} <= offered
    tools = harness.kernel.tools
    assert all(
        not tools[name].mutating and tools[name].plugin == "git"
        for name in offered
        if name.startswith("git_")
    )
    schema = next(
        s for s in harness.provider.requests[0].tools if s.name == "git_diff"
    ).input_schema
    assert schema["properties"]["staged"]["type"] == "boolean"
    assert "range" in schema["properties"]["revision"]["description"]


def test_options_smuggled_in_a_revision_are_refused(
    ketch_harness: Callable[..., Harness], repo: Path, tmp_path: Path
) -> None:
    target = tmp_path / "written-by-git.txt"
    _, result = run_tool(ketch_harness, "git_diff", {"revision": f"--output={target}"})
    assert not result.ok and "invalid revision" in result.output
    assert not target.exists()
    _, result = run_tool(ketch_harness, "git_log", {"revision": "HEAD --all"})
    assert not result.ok and "invalid revision" in result.output


def test_paths_outside_the_workspace_are_refused(
    ketch_harness: Callable[..., Harness], repo: Path
) -> None:
    _, result = run_tool(ketch_harness, "git_diff", {"paths": ["../elsewhere"]})
    assert not result.ok and "outside the workspace" in result.output


def test_pathspec_magic_is_taken_literally(
    ketch_harness: Callable[..., Harness], repo: Path
) -> None:
    # ':(exclude)x' would otherwise mean "everything except x": here it is a file name.
    _, result = run_tool(ketch_harness, "git_status", {"paths": [":(exclude)nothing"]})
    assert result.ok and result.output == "## main\n(working tree clean)"


def test_a_secret_looking_path_makes_the_guards_ask(
    ketch_harness: Callable[..., Harness], repo: Path
) -> None:
    """accesses() names each path, so the guards see it; denied, git never runs."""
    (repo / ".env").write_text("TOKEN=hunter2\n")
    harness, result = run_tool(ketch_harness, "git_diff", {"paths": [".env"]}, approver=deny_all)
    [permission] = harness.of_type("permission")
    assert permission.decision == "ask" and ".env" in permission.reason
    assert not result.ok and "hunter2" not in result.output


def test_programs_named_by_the_repository_config_never_run(
    ketch_harness: Callable[..., Harness], repo: Path, tmp_path: Path
) -> None:
    """A checkout's .git/config can name programs for fsmonitor, filters, textconv,
    diff drivers and the pager. None of them may run from a read-only tool."""
    marker = tmp_path / "pwned"
    payload = f"sh -c 'echo $0 >> {marker}; cat'"
    for key, value in [
        ("core.fsmonitor", f"sh -c 'echo fsmonitor >> {marker}'"),
        ("core.pager", payload),
        ("pager.diff", payload),
        ("filter.evil.clean", payload),
        ("filter.evil.smudge", payload),
        ("filter.evil.process", payload),
        ("diff.evil.textconv", payload),
        ("diff.evil.command", payload),
        ("diff.external", payload),
    ]:
        git(repo, "config", key, value)
    (repo / ".gitattributes").write_text("*.py filter=evil diff=evil\n")
    (repo / "app.py").write_text("def main():\n    return 3\n")
    os.utime(repo / "app.py", (946684800, 946684800))  # racy-clean stat: git must look at content
    for name, args in [
        ("git_status", {}),
        ("git_diff", {}),
        ("git_log", {"patch": True}),
        ("git_show", {"revision": "HEAD~1"}),
        ("git_blame", {"path": "app.py"}),
    ]:
        _, result = run_tool(ketch_harness, name, args)
        assert result.ok, result.output
    assert not marker.exists(), marker.read_text()


def test_not_a_repository_is_an_error_the_model_sees(
    ketch_harness: Callable[..., Harness], ketch_workspace: Path
) -> None:
    harness, result = run_tool(ketch_harness, "git_status")
    assert not result.ok and "not inside a git repository" in result.output
    assert (
        harness.of_type("turn_end")[0].stop_reason == "end_turn"
    )  # a tool error never ends the turn


def test_huge_output_is_truncated_with_a_note(
    ketch_harness: Callable[..., Harness], repo: Path
) -> None:
    (repo / "big.txt").write_text("".join(f"line {i}\n" for i in range(20_000)))
    git(repo, "add", "big.txt")
    _, result = run_tool(ketch_harness, "git_diff", {"staged": True})
    assert result.ok and "output truncated" in result.output
    assert len(result.output) < 41_000


def test_discovered_through_its_entry_point_when_installed(
    ketch_harness: Callable[..., Harness],
) -> None:
    try:
        importlib.metadata.distribution("ketch-git")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("ketch-git is not installed (running from a source tree)")
    harness = ketch_harness(env={"KETCH_AUTOLOAD": "all"})
    info = harness.kernel.pm.infos["git"]
    assert (info.status, info.distribution) == ("ok", "ketch-git")
    assert {"git_status", "git_diff", "git_log", "git_show", "git_blame"} <= set(
        harness.kernel.tools
    )
