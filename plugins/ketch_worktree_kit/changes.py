"""A worktree's changes, and merging them back.

**Snapshot.** What a worktree holds — its branch's commits *and* its uncommitted edits,
new files included — is read as one commit without touching the worktree: its index
is copied to a private temporary file, ``git add -A`` stages into that copy,
``write-tree`` and ``commit-tree`` make an unreferenced commit on top of the branch.
Diffs and the conflict check compare that commit.

**Merge.** ``merge`` first commits the worktree's pending edits on its branch (in the
worktree), then asks ``git merge-tree --write-tree`` whether merging the branch into
the repository's checked-out commit conflicts — which writes no file and no ref. A
conflict is reported with the files and *nothing* is changed. Otherwise ``git merge``
(or ``--squash`` and a commit) runs in the main work tree; git itself refuses when an
uncommitted change there would be overwritten, and ketch says so. Changes the person
staged there refuse the merge before anything runs: a squash would commit them under
ketch's message. Nothing is forced.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ketch_worktree_kit.layout import Record, WorktreeError
from ketch_worktree_kit.repo import LONG, Repo


def snapshot(repo: Repo, record: Record) -> str:
    """A commit holding the worktree as it is now (its branch head when nothing is
    uncommitted). Changes nothing in the worktree, its index or any ref."""
    where = record.folder
    if not where.is_dir():
        raise WorktreeError(f"worktree {record.name}'s folder {record.path} is gone")
    head = repo.head(where)
    index = Path(repo.must(["rev-parse", "--git-path", "index"], where, what="finding its index"))
    if not index.is_absolute():
        index = where / index
    with tempfile.TemporaryDirectory(prefix="ketch-index-") as temp:
        copy = Path(temp) / "index"
        if index.exists():
            shutil.copyfile(index, copy)
        repo.must(["add", "-A"], where, what="reading its files", index_file=copy, timeout=LONG)
        tree = repo.must(["write-tree"], where, what="reading its files", index_file=copy)
    if tree == repo.must(["rev-parse", f"{head}^{{tree}}"], where, what="reading its commit"):
        return head
    return repo.must(
        [
            *repo.identity(where),
            "commit-tree",
            tree,
            "-p",
            head,
            "-m",
            f"ketch: uncommitted changes of worktree {record.name}",
        ],
        where,
        what="recording its uncommitted changes",
    )


@dataclass
class Changes:
    """What a worktree changed relative to where it parted from the repository's
    checked-out commit (``since``): files with git's status letter (A, M, D, T),
    lines added and removed, its own commits, and whether edits are uncommitted."""

    record: Record
    snapshot: str
    since: str
    files: list[tuple[str, str]] = field(default_factory=list)
    added: int = 0
    removed: int = 0
    commits: int = 0
    uncommitted: bool = False
    patch: str = ""

    def stat(self) -> str:
        if not self.files:
            return "no changes"
        what = f"{len(self.files)} file(s), +{self.added} -{self.removed}"
        if self.uncommitted:
            what += ", uncommitted edits"
        return what


def changes(repo: Repo, record: Record, *, patch: bool = False) -> Changes:
    snap = snapshot(repo, record)
    target = repo.head()
    base = repo.git(["merge-base", target, snap])
    since = base.stdout.decode().strip() if base.ok else record.base
    result = Changes(record, snap, since)
    names = repo.must(
        ["diff", "--name-status", "--no-renames", "-z", since, snap], what="comparing it"
    )
    fields = names.split("\0")
    result.files = [(fields[i], fields[i + 1]) for i in range(0, len(fields) - 1, 2)]
    for line in repo.must(
        ["diff", "--numstat", "--no-renames", since, snap], what="comparing it"
    ).splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0].isdigit() and parts[1].isdigit():
            result.added += int(parts[0])
            result.removed += int(parts[1])
    tip = repo.must(["rev-parse", record.branch], what="reading its branch")
    result.uncommitted = snap != tip
    result.commits = int(
        repo.must(["rev-list", "--count", f"{target}..{tip}"], what="counting its commits") or 0
    )
    if patch:
        result.patch = repo.must(["diff", "--no-color", since, snap], what="comparing it")
    return result


@dataclass
class Conflicts:
    tree: str  # the merged tree git would write ("" when it could not)
    files: list[str]


def merge_check(repo: Repo, commit: str) -> Conflicts:
    """What merging ``commit`` into the repository's checked-out commit would do,
    found without writing a file or a ref."""
    run = repo.git(
        ["merge-tree", "--write-tree", "--name-only", "--no-messages", "HEAD", commit],
        timeout=LONG,
    )
    if run.code not in (0, 1):
        raise WorktreeError(f"git merge-tree: {run.reason()}")
    lines = run.stdout.decode("utf-8", "surrogateescape").split("\n")
    files: list[str] = []
    for line in lines[1:]:
        if not line:
            break
        if line not in files:
            files.append(line)
    return Conflicts(lines[0].strip() if lines else "", files if run.code == 1 else [])


def unmerged(repo: Repo, record: Record) -> str:
    """ "" when everything the worktree holds is in the repository's checked-out
    commit already (merged, squashed, or never changed); else what is not."""
    snap = snapshot(repo, record)
    check = merge_check(repo, snap)
    if check.files:
        return f"{len(check.files)} file(s) that would conflict"
    head_tree = repo.must(["rev-parse", "HEAD^{tree}"], what="reading the checked-out commit")
    if check.tree == head_tree:
        return ""
    found = changes(repo, record)
    return found.stat()


@dataclass
class MergeResult:
    merged: bool
    message: str  # one line for the person
    conflicts: list[str] = field(default_factory=list)
    commit: str = ""
    files: list[str] = field(default_factory=list)


def commit_pending(repo: Repo, record: Record) -> bool:
    """Commit the worktree's uncommitted edits on its branch (no hook runs, nothing is
    signed). True when there was something to commit."""
    where = record.folder
    repo.must(["add", "-A"], where, what="staging its edits", timeout=LONG)
    staged = repo.git(["diff", "--cached", "--quiet"], where)
    if staged.ok:
        return False
    repo.must(
        [
            *repo.identity(where),
            "commit",
            "--quiet",
            "--no-verify",
            "-m",
            f"ketch worktree {record.name}: its changes",
        ],
        where,
        what="committing its edits",
        timeout=LONG,
    )
    return True


def merge(repo: Repo, record: Record, *, squash: bool = False, message: str = "") -> MergeResult:
    """Merge the worktree's branch (its edits committed first) into the main work tree's
    checked-out commit. Conflicts change nothing; see the module's docstring."""
    if repo.merge_in_progress():
        raise WorktreeError(
            f"a merge is already in progress in {repo.main}; finish it or abort it (git merge --abort) first"
        )
    repo.refuse_redirects()
    staged = repo.git(["diff", "--cached", "--quiet", "HEAD", "--"], timeout=LONG)
    if staged.code not in (0, 1):
        raise WorktreeError(f"reading what is staged in {repo.main}: {staged.reason()}")
    if staged.code == 1:
        return MergeResult(
            False,
            f"{repo.main} has staged changes that are not committed; a merge would carry them "
            "along, so nothing was changed: commit them, or unstage them (git restore --staged .), "
            "then merge again",
        )
    target = repo.head()
    check = merge_check(repo, snapshot(repo, record))
    if check.files:
        return MergeResult(
            False,
            f"merging worktree {record.name} into {repo.main} would conflict in "
            f"{len(check.files)} file(s); nothing was changed",
            conflicts=check.files,
        )
    if check.tree == repo.must(["rev-parse", "HEAD^{tree}"], what="reading the checked-out commit"):
        return MergeResult(False, f"worktree {record.name} holds nothing that {repo.main} lacks")
    commit_pending(repo, record)
    files = repo.must(
        ["diff", "--name-only", "--no-renames", "-z", f"{target}...{record.branch}"],
        what="listing its changes",
    ).split("\0")
    files = [f for f in files if f]
    refused = filtered(repo, files)
    if refused:
        return MergeResult(
            False,
            f"{', '.join(refused[:5])} use a git filter ketch's git never runs, so a merge by ketch "
            f"would write them unfiltered; merge it yourself: git merge {record.branch}",
        )
    text = message or f"Merge worktree {record.name} ({record.branch})"
    if squash:
        run = repo.git(["merge", "--squash", "--quiet", record.branch], timeout=LONG)
        if run.ok:
            run = repo.git(
                [*repo.identity(), "commit", "--quiet", "--no-verify", "-m", text], timeout=LONG
            )
            if not run.ok:
                return MergeResult(
                    False,
                    f"the squashed changes are staged in {repo.main} but could not be committed: {run.reason()}",
                )
    else:
        run = repo.git(
            [*repo.identity(), "merge", "--no-edit", "--quiet", "-m", text, record.branch],
            timeout=LONG,
        )
    if not run.ok:
        if repo.merge_in_progress():
            repo.git(["merge", "--abort"], timeout=LONG)
        return MergeResult(False, f"git refused the merge, nothing was changed: {_why(run)}")
    head = repo.head()
    how = "squashed into" if squash else "merged into"
    return MergeResult(
        True,
        f"worktree {record.name} {how} {repo.main} ({len(files)} file(s), commit {head[:12]})",
        commit=head,
        files=files,
    )


def _why(run: object) -> str:
    """git's own explanation, joined onto one line (which files, what to do)."""
    stderr = getattr(run, "stderr", b"") or b""
    lines = [
        line.strip()
        for line in stderr.decode("utf-8", "replace").splitlines()
        if line.strip() and not line.startswith("hint:")
    ]
    return " ".join(lines)[:600] or getattr(run, "reason", lambda: "")()


def filtered(repo: Repo, paths: list[str]) -> list[str]:
    """The paths whose ``filter`` attribute names a filter some configuration defines
    (ketch's git runs none, so it would write them as stored)."""
    if not paths:
        return []
    from ketch_git_kit import git_executable, read_config

    git = git_executable(repo.environ, repo.main)
    if git is None:
        return []
    try:
        defined = {
            (e.subsection or "").lower()
            for e in read_config(repo.main, git=git, environ=repo.environ)
            if e.section == "filter" and e.variable in ("clean", "smudge", "process")
        }
    except Exception:  # noqa: BLE001 - unreadable config: merge refuses elsewhere
        return []
    if not defined:
        return []
    found: list[str] = []
    for start in range(0, len(paths), 200):
        run = repo.git(["check-attr", "-z", "filter", "--", *paths[start : start + 200]])
        fields = run.stdout.decode("utf-8", "surrogateescape").split("\0")
        for i in range(0, len(fields) - 2, 3):
            path, value = fields[i], fields[i + 2]
            if value.lower() in defined and path not in found:
                found.append(path)
    return found
