"""Making, finding and removing ketch's worktrees.

A worktree is made in two steps so that nothing of the repository's runs:
``git worktree add --no-checkout -b ketch/NAME PATH BASE`` (in the repository), then
``git reset --hard`` *in the new worktree*, where git reads its configuration as it
applies there (an ``includeIf "onbranch:ketch/*"`` included file included), so that
ketch switches off every filter that configuration defines before the files are
written. Files a filter would have changed (``filter=lfs``) are written as git stores
them.
"""

from __future__ import annotations

import os
from pathlib import Path

from ketch_worktree_kit.layout import (
    BRANCH_PREFIX,
    Record,
    WorktreeError,
    check_name,
    now,
    read_record,
    record_file,
    records,
    write_record,
)
from ketch_worktree_kit.repo import LONG, Repo


def find(repo: Repo, name: str) -> Record:
    """The worktree ``name`` of this repository; a WorktreeError naming the others."""
    check_name(name)
    record = read_record(repo.folder, name)
    if record is None:
        known = ", ".join(r.name for r in records(repo.folder)) or "none"
        raise WorktreeError(
            f"no worktree named {name!r} in {repo.main} (its worktrees: {known}; `ketch worktrees list`)"
        )
    return record


def all_of(repo: Repo) -> list[Record]:
    return records(repo.folder)


def ensure(repo: Repo, name: str) -> tuple[Record, bool]:
    """The worktree ``name``: the existing one, or a new one started from the commit
    checked out where ketch runs (``repo.here``). True when it was made now."""
    check_name(name)
    existing = read_record(repo.folder, name)
    if existing is not None:
        if not existing.folder.is_dir():
            raise WorktreeError(
                f"worktree {name!r}'s folder {existing.path} is gone; "
                f"`ketch worktrees remove {name}` forgets it"
            )
        return existing, False
    return create(repo, name), True


def create(repo: Repo, name: str) -> Record:
    check_name(name)
    repo.refuse_redirects(repo.here)
    path = repo.folder / name
    branch = BRANCH_PREFIX + name
    if os.path.lexists(path):
        raise WorktreeError(
            f"{path} already exists and is not a worktree ketch knows; move it away"
        )
    if repo.branch_exists(branch):
        raise WorktreeError(
            f"the branch {branch} already exists; pick another name, or delete it (git branch -D {branch})"
        )
    base = repo.head(repo.here)
    repo.folder.mkdir(parents=True, exist_ok=True)
    os.chmod(repo.folder, 0o700)
    repo.must(
        ["worktree", "add", "--quiet", "--no-checkout", "-b", branch, str(path), base],
        what=f"git worktree add {name}",
        timeout=LONG,
    )
    try:
        repo.must(
            ["reset", "--quiet", "--hard", "HEAD"],
            path,
            what=f"checking out worktree {name}",
            timeout=LONG,
        )
        record = Record(
            name=name,
            branch=branch,
            base=base,
            created=now(),
            repository=str(repo.main),
            path=str(path),
        )
        write_record(repo.folder, record)
    except BaseException:
        repo.git(["worktree", "remove", "--force", str(path)])
        repo.git(["branch", "-D", branch])
        raise
    return record


def relative_start(repo: Repo, start: Path, record: Record) -> Path:
    """Where in the worktree a session started at ``start`` (a folder of ``repo.here``)
    runs: the same folder relative to the work tree, if it exists there, else its top."""
    try:
        inside = Path(os.path.realpath(start)).relative_to(repo.here)
    except ValueError:
        return record.folder
    target = record.folder / inside
    return target if target.is_dir() else record.folder


def remove(repo: Repo, record: Record, *, force: bool = False) -> list[str]:
    """Remove the worktree, its branch and its record. Refused while it holds work that
    is not in the repository's checked-out commit, unless ``force``. Returns what was
    done, one line each."""
    from ketch_worktree_kit.changes import unmerged

    done: list[str] = []
    if record.folder.is_dir():
        left = unmerged(repo, record)
        if left and not force:
            raise WorktreeError(
                f"worktree {record.name} has changes that are not merged into {repo.main}: "
                f"{left} (`ketch worktrees diff {record.name}`); merge them first "
                f"(`ketch worktrees merge {record.name}`), or discard them with --force"
            )
        repo.must(
            ["worktree", "remove", "--force", str(record.folder)],
            what=f"removing worktree {record.name}",
            timeout=LONG,
        )
        done.append(f"removed {record.path}")
    else:
        repo.git(["worktree", "prune"])
    if repo.branch_exists(record.branch):
        repo.must(["branch", "-D", record.branch], what=f"deleting branch {record.branch}")
        done.append(f"deleted branch {record.branch}")
    record_file(repo.folder, record.name).unlink(missing_ok=True)
    return done
