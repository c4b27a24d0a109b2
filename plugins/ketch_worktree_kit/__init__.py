"""The worktree kit: git worktrees ketch makes for sessions and subagents, their
changes, merging them back, and removing them. A library: it registers nothing (the
``worktrees`` plugin gives it a command line and a tool; the ``agents`` plugin gives
subagents worktrees of their own).

    from ketch_worktree_kit import Repo, ensure, changes, merge

    repo = Repo.of(kernel.workspace, kernel.environ)
    record, made = ensure(repo, "fix-parser")      # ketch/fix-parser, outside the repository
    print(changes(repo, record).stat())            # what it changed so far, edits included
    result = merge(repo, record, squash=True)      # conflicts change nothing

Every git it runs goes through ``ketch_git_kit.run_git``: nothing the repository names
(filters, hooks, merge drivers, fsmonitor, signing) runs while a worktree is made,
compared, merged or removed. See docs/parallel.md.
"""

from __future__ import annotations

from ketch_worktree_kit.changes import (
    Changes,
    Conflicts,
    MergeResult,
    changes,
    commit_pending,
    merge,
    merge_check,
    snapshot,
    unmerged,
)
from ketch_worktree_kit.layout import (
    BRANCH_PREFIX,
    Record,
    WorktreeError,
    check_name,
    worktrees_root,
)
from ketch_worktree_kit.repo import Repo
from ketch_worktree_kit.worktrees import all_of, create, ensure, find, relative_start, remove

__all__ = [
    "BRANCH_PREFIX",
    "Changes",
    "Conflicts",
    "MergeResult",
    "Record",
    "Repo",
    "WorktreeError",
    "all_of",
    "changes",
    "check_name",
    "commit_pending",
    "create",
    "ensure",
    "find",
    "merge",
    "merge_check",
    "relative_start",
    "remove",
    "snapshot",
    "unmerged",
    "worktrees_root",
]
