"""A hostile repository's git configuration runs nothing while ketch makes a worktree,
runs a session there, compares it, merges it back and removes it.

The repository (tests/trust/hostile.py, plus a merge driver, a conditional include that
only applies on ketch's branches, and commit signing) names a program for every kind
git has; every program appends its name to a canary log outside the repository. The
controls first show that plain git, as a person runs it, does run them for each of these
operations — a test that only shows "nothing ran" could not fail otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ketch.testing import call, text
from tests.parallel.conftest import GIT_ENV, Ketch, clean, needs_git
from tests.trust.hostile import Canaries, arm_git, git

pytestmark = needs_git

MORE_CONFIG = """
[merge "evil"]
\tdriver = sh {s} merge-driver %A
[includeIf "onbranch:ketch/**"]
\tpath = ../.gitconfig-onbranch
[commit]
\tgpgSign = true
"""
ONBRANCH = """
[filter "sneaky"]
\tsmudge = sh {s} onbranch-smudge
\tclean = sh {s} onbranch-clean
\trequired = true
"""
BASE_PY = "".join(f"line {n}\n" for n in range(1, 21))
QUIET = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "commit.gpgSign=false",
)  # the fixture's own commits
RUN = ("--provider", "scripted", "--output-format", "stream-json", "--profile", "full-access")


def commit(ws: Path, message: str, *paths: str) -> None:
    """A commit of the test's own, made without running any of the repository's programs."""
    git(
        ws,
        *QUIET,
        "commit",
        "-q",
        "-m",
        message,
        "--no-verify",
        *(["--", *paths] if paths else ["-a"]),
    )


def edit_in_worktree(ketch: Ketch, name: str, old: str, new: str) -> None:
    """A ``ketch -w NAME`` session that replaces ``old`` with ``new`` in m.py."""
    script = [
        call("read_file", {"path": "m.py"}),
        call("write_file", {"path": "m.py", "content": BASE_PY.replace(old, new)}),
        text("edited"),
    ]
    session = ketch("-w", name, "-p", "edit m.py", *RUN, script=script, env=GIT_ENV)
    clean(session)
    assert session.returncode == 0, session.stderr[-2000:]


def arm(ws: Path, log: Path) -> Canaries:
    script = arm_git(ws, log)
    with open(ws / ".git" / "config", "a") as config:
        config.write(MORE_CONFIG.format(s=script))
    (ws / ".gitconfig-onbranch").write_text(ONBRANCH.format(s=script))
    with open(ws / ".gitattributes", "a") as attributes:
        attributes.write("*.py merge=evil diff=evil\n*.cfg filter=sneaky\n")
    (ws / "m.py").write_text(BASE_PY)
    (ws / "c.cfg").write_text("x\n")
    git(ws, *QUIET, "add", "m.py", "c.cfg", ".gitattributes", ".gitconfig-onbranch")
    commit(ws, "more", "m.py", "c.cfg", ".gitattributes", ".gitconfig-onbranch")
    canaries = Canaries(log)
    canaries.reset()
    return canaries


def test_the_controls_plain_git_runs_them_all(tmp_path: Path) -> None:
    ws, wt = tmp_path / "ws", tmp_path / "wt"
    canaries = arm(ws, tmp_path / "canary.log")
    git(ws, "worktree", "add", "-q", "-b", "ketch/control", str(wt), check=False)
    made = set(canaries.ran())
    # Checkout: filters (the config's, an include.path's, an onbranch include's), the
    # post-checkout hook and fsmonitor.
    assert {"smudge", "included-smudge", "onbranch-smudge", "hook-post-checkout"} <= made, made
    assert "fsmonitor" in made, made
    (wt / "m.py").write_text(BASE_PY.replace("line 3\n", "line three\n"))
    commit(wt, "worktree side", "m.py")
    (ws / "m.py").write_text(BASE_PY.replace("line 18\n", "line eighteen\n"))
    commit(ws, "main side", "m.py")
    canaries.reset()
    git(ws, "merge", "--no-edit", "ketch/control", check=False)
    merged = set(canaries.ran())
    assert {"merge-driver", "gpg", "fsmonitor", "clean", "included-clean"} <= merged, merged
    canaries.reset()
    git(ws, "diff", "HEAD~1", "--", "m.py", check=False)
    assert {"external-diff", "textconv"} & set(canaries.ran())


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Canaries, Ketch]:
    ws = tmp_path / "ws"
    canaries = arm(ws, tmp_path / "canary.log")
    ketch = Ketch(tmp_path, ws)
    ketch.env["HOME"] = str(tmp_path)  # the fixture's git identity lives in no config: use GIT_ENV
    return ws, canaries, ketch


def test_a_worktree_session_diff_merge_and_remove_run_nothing_of_the_repository(
    hostile: tuple[Path, Canaries, Ketch],
) -> None:
    ws, canaries, ketch = hostile
    edit_in_worktree(ketch, "evil", "line 3\n", "line three\n")
    assert canaries.ran() == [], f"making the worktree and its session ran {canaries.ran()}"
    folder = Path(ketch.worktrees()["evil"]["path"])
    assert (folder / "m.py").read_text().count("line three") == 1
    assert (folder / "c.cfg").read_text() == "x\n"  # written as stored: no filter ran

    diff = ketch("worktrees", "diff", "evil", env=GIT_ENV)
    assert diff.returncode == 0 and "+line three" in diff.stdout
    assert canaries.ran() == [], f"the diff ran {canaries.ran()}"

    # The main side changes the same file elsewhere: a real three-way merge of m.py,
    # whose merge attribute names the repository's driver.
    (ws / "m.py").write_text(BASE_PY.replace("line 18\n", "line eighteen\n"))
    commit(ws, "main", "m.py")
    canaries.reset()
    merged = ketch("worktrees", "merge", "evil", env=GIT_ENV)
    clean(merged)
    assert merged.returncode == 0, merged.stderr
    assert canaries.ran() == [], f"the merge ran {canaries.ran()}"
    both = (ws / "m.py").read_text()
    assert "line three" in both and "line eighteen" in both  # git's own merge did it
    assert "gpgsig" not in git(ws, "cat-file", "-p", "HEAD")  # nothing was signed

    removed = ketch("worktrees", "remove", "evil", env=GIT_ENV)
    assert removed.returncode == 0, removed.stderr
    assert canaries.ran() == [], f"removing it ran {canaries.ran()}"
    # Later, too: what ketch left behind makes nothing run for ketch's own next look.
    again = ketch("worktrees", "list", env=GIT_ENV)
    assert again.returncode == 0 and canaries.ran() == []


def test_a_conflicting_merge_through_the_repositorys_driver_changes_nothing(
    hostile: tuple[Path, Canaries, Ketch],
) -> None:
    ws, canaries, ketch = hostile
    edit_in_worktree(ketch, "clash", "line 5\n", "worktree 5\n")
    (ws / "m.py").write_text(BASE_PY.replace("line 5\n", "main 5\n"))
    commit(ws, "main", "m.py")
    head = git(ws, "rev-parse", "HEAD")
    canaries.reset()
    refused = ketch("worktrees", "merge", "clash", env=GIT_ENV)
    assert refused.returncode == 1 and "m.py" in refused.stderr and "conflict" in refused.stderr
    assert canaries.ran() == []
    assert (ws / "m.py").read_text() == BASE_PY.replace("line 5\n", "main 5\n")
    assert git(ws, "rev-parse", "HEAD") == head


def test_a_subagent_in_a_worktree_runs_nothing_of_the_repository(
    hostile: tuple[Path, Canaries, Ketch],
) -> None:
    """The agent tool's path: the child's worktree is made, its diff read for the
    result, and the parent's worktree_merge merges it — nothing of the repository runs."""
    ws, canaries, ketch = hostile
    child = {
        "description": "edit m.py",
        "prompt": "CHILD edit m.py",
        "isolation": "worktree",
    }
    script = [
        {**call("agent", child), "when": "PARENT"},
        {**call("read_file", {"path": "m.py"}), "when": "CHILD"},
        {
            **call(
                "write_file", {"path": "m.py", "content": BASE_PY.replace("line 7\n", "seven\n")}
            ),
            "when": "CHILD",
        },
        {**text("edited"), "when": "CHILD"},
        {**text("done"), "when": "PARENT"},
    ]
    first = ketch("-p", "PARENT go", *RUN, script=script, env=GIT_ENV)
    clean(first)
    assert first.returncode == 0, first.stderr[-2000:]
    assert canaries.ran() == [], f"the subagent's worktree ran {canaries.ran()}"
    answer = json.dumps(first.requests[-1]["messages"][-1])
    assert "+seven" in answer  # its diff came back
    (name,) = list(ketch.worktrees())
    merged = ketch(
        "--continue",
        "-p",
        "merge",
        *RUN,
        script=[call("worktree_merge", {"name": name}), text("merged")],
        env=GIT_ENV,
    )
    clean(merged)
    assert merged.returncode == 0, merged.stderr[-2000:]
    assert "seven" in (ws / "m.py").read_text()
    assert canaries.ran() == [], f"the merge ran {canaries.ran()}"
