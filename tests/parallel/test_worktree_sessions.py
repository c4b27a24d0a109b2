"""``ketch -w NAME`` sessions, ``ketch worktrees`` and trust in a worktree, through the
real command line: two sessions at once, each in its own worktree, judged by what each
one read, what the main work tree holds, and what git says."""

from __future__ import annotations

import shlex
from pathlib import Path

from ketch.testing import call, text
from tests.parallel.conftest import (
    Ketch,
    clean,
    git,
    needs_git,
    requests,
    tool_outputs,
    tree_digest,
)

pytestmark = needs_git

RUN = ("--provider", "scripted", "--output-format", "stream-json", "--profile", "full-access")


def edit(content: str, *, delay: float = 0.0) -> list[dict]:
    """Read a.txt, write ``content`` into it, read it again after ``delay``, answer."""
    return [
        call("read_file", {"path": "a.txt"}),
        call("write_file", {"path": "a.txt", "content": content}),
        {**call("read_file", {"path": "a.txt"}), "delay": delay},
        text("edited"),
    ]


def test_two_worktree_sessions_at_once_never_see_each_other_and_the_second_merge_conflicts(
    ketch: Ketch, repo: Path
) -> None:
    before = tree_digest(repo)
    one, one_log = ketch.popen(
        "-w", "one", "-p", "edit a.txt", *RUN, script=edit("one\nONE\nthree\n", delay=2.0)
    )
    # The second reads a.txt only after the first wrote its copy (its first answer waits).
    script_two = edit("one\nTWO\nthree\n")
    script_two[0] = {**script_two[0], "delay": 4.0}
    two, two_log = ketch.popen("-w", "two", "-p", "edit a.txt", *RUN, script=script_two)
    out_one, err_one = one.communicate(timeout=120)
    out_two, err_two = two.communicate(timeout=120)
    assert one.returncode == 0 and two.returncode == 0, (err_one[-2000:], err_two[-2000:])
    assert "Traceback" not in err_one + err_two

    first, second = requests(one_log), requests(two_log)
    # The first session's write came before the second session's first read ...
    assert first[2]["received_at"] < second[1]["received_at"]
    # ... which still saw the committed text, and each session saw only its own edit.
    assert "two" in tool_outputs(second[1])[-1] and "ONE" not in tool_outputs(second[1])[-1]
    assert "ONE" in tool_outputs(first[-1])[-1] and "TWO" not in tool_outputs(first[-1])[-1]
    assert "TWO" in tool_outputs(second[-1])[-1] and "ONE" not in tool_outputs(second[-1])[-1]

    # Nothing in the main work tree changed, nothing was committed there.
    assert tree_digest(repo) == before
    assert git(repo, "status", "--porcelain") == ""
    trees = ketch.worktrees()
    assert set(trees) == {"one", "two"}
    for name, word in (("one", "ONE"), ("two", "TWO")):
        folder = Path(trees[name]["path"])
        assert word in (folder / "a.txt").read_text()
        assert not folder.is_relative_to(repo)  # outside the repository
        assert trees[name]["branch"] == f"ketch/{name}" and trees[name]["files_changed"] == 1

    diff = ketch("worktrees", "diff", "one")
    assert diff.returncode == 0 and "+ONE" in diff.stdout and "-two" in diff.stdout

    merged = ketch("worktrees", "merge", "one")
    clean(merged)
    assert merged.returncode == 0, merged.stderr
    assert (repo / "a.txt").read_text() == "one\nONE\nthree\n"
    after_first = tree_digest(repo)

    refused = ketch("worktrees", "merge", "two")
    clean(refused)
    assert refused.returncode == 1
    assert "conflict" in refused.stderr and "a.txt" in refused.stderr
    assert "nothing was changed" in refused.stderr
    assert tree_digest(repo) == after_first  # a conflict changes nothing ...
    assert git(repo, "status", "--porcelain") == ""  # ... and leaves no merge half done
    assert not (repo / ".git" / "MERGE_HEAD").exists()


def test_a_squash_merge_is_one_commit_and_remove_cleans_up(ketch: Ketch, repo: Path) -> None:
    result = ketch("-w", "sq", "-p", "edit", *RUN, script=edit("squashed\n"))
    clean(result)
    assert result.returncode == 0, result.stderr
    head = git(repo, "rev-parse", "HEAD").strip()
    blocked = ketch("worktrees", "remove", "sq")
    assert (
        blocked.returncode == 1 and "not merged" in blocked.stderr
    )  # work is never dropped silently
    merged = ketch("worktrees", "merge", "sq", "--squash", "-m", "squash it")
    assert merged.returncode == 0, merged.stderr
    assert git(repo, "rev-list", "--count", f"{head}..HEAD").strip() == "1"
    assert git(repo, "log", "-1", "--format=%s").strip() == "squash it"
    assert len(git(repo, "log", "-1", "--format=%P").split()) == 1  # not a merge commit
    path = Path(ketch.worktrees()["sq"]["path"])
    gone = ketch("worktrees", "remove", "sq")
    assert gone.returncode == 0, gone.stderr
    assert ketch.worktrees() == {}
    assert "ketch/sq" not in git(repo, "branch", "--list")
    assert not path.exists()


def test_a_worktree_session_has_its_own_checkpoints_and_sessions(ketch: Ketch, repo: Path) -> None:
    result = ketch("-w", "own", "-p", "edit", *RUN, script=edit("mine\n"))
    clean(result)
    (session,) = result.of_type("session")
    folder = Path(ketch.worktrees()["own"]["path"])
    # The session belongs to the worktree: listed there, not in the main work tree.
    there = ketch("sessions", "list", "--json", cwd=folder)
    here = ketch("sessions", "list", "--json")
    assert session["session_id"] in there.stdout and session["session_id"] not in here.stdout
    # Its checkpoints undo its edit in the worktree, never in the main work tree.
    undo = ketch("sessions", "undo", "--force", cwd=folder)
    assert undo.returncode == 0, undo.stderr
    assert (folder / "a.txt").read_text() == "one\ntwo\nthree\n"
    assert (repo / "a.txt").read_text() == "one\ntwo\nthree\n"


def test_bad_names_and_places_are_said_plainly(ketch: Ketch, tmp_path: Path) -> None:
    bad = ketch("-w", "../evil", "-p", "hi", *RUN, script=[text("no")])
    assert bad.returncode == 1 and "cannot name a worktree" in bad.stderr
    assert "Traceback" not in bad.stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    outside = ketch("-w", "x", "-p", "hi", *RUN, script=[text("no")], cwd=plain)
    assert outside.returncode == 1 and "not in a git repository" in outside.stderr
    unknown = ketch("worktrees", "merge", "nope")
    assert unknown.returncode == 1 and "no worktree named 'nope'" in unknown.stderr


HOOK_CONFIG = """
[[hooks.SessionStart]]
matcher = "*"
command = "sh scripts/hook.sh"
"""


def test_trust_in_a_worktree_holds_for_identical_content_only(
    ketch: Ketch, repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "hook.log"
    (repo / ".ketch").mkdir()
    (repo / ".ketch" / "config.toml").write_text(HOOK_CONFIG)
    (repo / "scripts").mkdir()
    (repo / "scripts" / "hook.sh").write_text(f'echo "$PWD" >> "{log}"\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a hook")
    trusted = ketch("trust", "--yes")
    assert trusted.returncode == 0, trusted.stderr

    same = ketch("-w", "same", "-p", "hi", *RUN, script=[text("ok")])
    clean(same)
    folder = Path(ketch.worktrees()["same"]["path"])
    assert log.read_text().split() == [str(folder)]  # identical content: trusted there too

    # A worktree whose hook script differs: the same hook is held back there.
    made = ketch("-w", "changed", "-p", "hi", *RUN, script=[text("ok")])
    assert made.returncode == 0
    changed = Path(ketch.worktrees()["changed"]["path"])
    runs = log.read_text().split()
    assert runs.count(str(changed)) == 1
    (changed / "scripts" / "hook.sh").write_text(f'echo "changed $PWD" >> "{log}"\n')
    again = ketch("-w", "changed", "-p", "hi", *RUN, script=[text("ok")])
    clean(again)
    assert log.read_text().split() == runs  # not run
    notices = " ".join(e["message"] for e in again.of_type("notice"))
    assert "hook SessionStart" in notices and "changed since you trusted it" in notices


def test_a_worktree_sessions_sandbox_has_the_worktree_for_its_root(
    ketch: Ketch, repo: Path
) -> None:
    """Commands the model runs in a worktree session write the worktree, never the main
    work tree nor the repository's git directory (a hook planted there would run at the
    person's next commit), and git works there. Judged on the host, by effect."""
    targets = [
        "made.txt",
        str(repo / "escaped.txt"),
        str(repo / ".git" / "hooks" / "pre-commit"),
        str(repo / ".git" / "config"),
    ]
    escape = (
        "import pathlib, sys\n"
        "for p in sys.argv[1:]:\n"
        "    try:\n"
        "        with open(p, 'a') as f: f.write('planted\\n')\n"
        "        print('WROTE', p)\n"
        "    except OSError as e:\n"
        "        print('REFUSED', p, type(e).__name__)\n"
    )
    config_before = (repo / ".git" / "config").read_text()
    before = tree_digest(repo)
    script = [
        call(
            "shell",
            {
                "command": " ".join(
                    ["python3", "-c", shlex.quote(escape), *map(shlex.quote, targets)]
                )
            },
        ),
        call("shell", {"command": "git status --short"}),
        text("looked"),
    ]
    result = ketch(
        "-w",
        "boxed",
        "-p",
        "try",
        "--provider",
        "scripted",
        "--output-format",
        "stream-json",
        "--profile",
        "assisted",
        script=script,
    )
    clean(result)
    assert result.returncode == 0, result.stderr[-2000:]
    outputs = tool_outputs(result.requests[-1])
    assert "WROTE made.txt" in outputs[0], outputs  # the command did run
    folder = Path(ketch.worktrees()["boxed"]["path"])
    assert (folder / "made.txt").read_text() == "planted\n"
    assert "?? made.txt" in outputs[1], outputs[1]  # git reads the worktree's own state
    # Nothing reached the main work tree or the repository's git directory.
    assert tree_digest(repo) == before and not (repo / "escaped.txt").exists()
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert (repo / ".git" / "config").read_text() == config_before


def test_a_merge_never_takes_the_persons_own_uncommitted_work_along(
    ketch: Ketch, repo: Path
) -> None:
    result = ketch("-w", "mine", "-p", "edit", *RUN, script=edit("one\nMINE\nthree\n"))
    clean(result)
    assert result.returncode == 0, result.stderr
    head = git(repo, "rev-parse", "HEAD")
    # The person staged a file of their own, and edits the file the worktree changed.
    (repo / "staged.txt").write_text("mine, not ketch's\n")
    git(repo, "add", "staged.txt")
    for how in ((), ("--squash",)):
        refused = ketch("worktrees", "merge", "mine", *how)
        clean(refused)
        assert refused.returncode == 1 and "staged changes" in refused.stderr, refused.stderr
        assert git(repo, "rev-parse", "HEAD") == head
    git(repo, "restore", "--staged", "staged.txt")
    (repo / "a.txt").write_text("one\nPERSON\nthree\n")
    refused = ketch("worktrees", "merge", "mine", "--squash")
    clean(refused)
    assert refused.returncode == 1 and "nothing was changed" in refused.stderr, refused.stderr
    assert (repo / "a.txt").read_text() == "one\nPERSON\nthree\n"  # the person's edit kept
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain").split("\n")[:1] == [" M a.txt"]
    # Once the person's work is out of the way, the merge goes through.
    git(repo, "checkout", "--", "a.txt")
    merged = ketch("worktrees", "merge", "mine", "--squash")
    assert merged.returncode == 0, merged.stderr
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["a.txt"]


def test_a_made_up_worktree_link_inherits_no_trust(
    ketch: Ketch, repo: Path, tmp_path: Path
) -> None:
    """A folder whose ``.git`` file names a git directory of its own making (one a tool
    call could write) that claims the trusted repository as its common directory
    does not get that repository's pins."""
    log = tmp_path / "hook.log"
    (repo / ".ketch").mkdir()
    (repo / ".ketch" / "config.toml").write_text(HOOK_CONFIG)
    (repo / "scripts").mkdir()
    (repo / "scripts" / "hook.sh").write_text(f'echo "$PWD" >> "{log}"\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a hook")
    assert ketch("trust", "--yes").returncode == 0
    fake = tmp_path / "fake"
    (fake / ".ketch").mkdir(parents=True)
    (fake / ".ketch" / "config.toml").write_text(HOOK_CONFIG)
    (fake / "scripts").mkdir()
    (fake / "scripts" / "hook.sh").write_text(f'echo "$PWD" >> "{log}"\n')
    made_up = fake / "gitdir"
    made_up.mkdir()
    (fake / ".git").write_text(f"gitdir: {made_up}\n")
    (made_up / "gitdir").write_text(f"{fake / '.git'}\n")
    (made_up / "commondir").write_text(f"{repo / '.git'}\n")
    (made_up / "HEAD").write_text(git(repo, "rev-parse", "HEAD"))
    result = ketch("-p", "hi", *RUN, script=[text("ok")], cwd=fake)
    clean(result)
    assert not log.exists() or str(fake) not in log.read_text()  # held back
    notices = " ".join(e["message"] for e in result.of_type("notice"))
    assert "hook SessionStart" in notices
