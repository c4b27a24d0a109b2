"""``ketch worktrees list|diff|merge|remove``: the person's view of a repository's worktrees."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel
    from ketch_worktree_kit import Repo


def run(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch.api import KetchError
    from ketch_worktree_kit import Repo, WorktreeError

    action = getattr(args, "worktrees_action", None) or "list"
    try:
        repo = Repo.of(kernel.workspace, kernel.environ)
        if action == "list":
            return _list(repo, bool(getattr(args, "json", False)))
        if action == "diff":
            return _diff(repo, args.name, args.stat)
        if action == "merge":
            return _merge(repo, args.name, args.squash, args.message)
        return _remove(repo, args.name, args.force)
    except WorktreeError as exc:
        raise KetchError(str(exc), exit_code=1) from None


def _out(text: str) -> None:
    from ketch_text_kit.terminal import for_terminal

    sys.stdout.write(for_terminal(text) if sys.stdout.isatty() else text)


def _list(repo: Repo, as_json: bool) -> int:
    from ketch_worktree_kit import WorktreeError, all_of, changes

    rows: list[dict[str, Any]] = []
    for record in all_of(repo):
        state, files = "", 0
        if not record.folder.is_dir():
            state = "folder missing"
        else:
            try:
                found = changes(repo, record)
                state, files = found.stat(), len(found.files)
            except WorktreeError as exc:
                state = f"cannot read it: {exc}"
        rows.append(
            {
                "name": record.name,
                "branch": record.branch,
                "path": record.path,
                "base": record.base,
                "created": record.created,
                "files_changed": files,
                "changes": state,
            }
        )
    if as_json:
        print(json.dumps({"repository": str(repo.main), "worktrees": rows}, indent=1))
        return 0
    if not rows:
        print(f"no worktrees of {repo.main} (ketch -w NAME makes one)")
        return 0
    width = max(len(r["name"]) for r in rows) + 2
    for row in rows:
        _out(f"{row['name'].ljust(width)}{row['branch']}  {row['changes']}\n")
        _out(f"{''.ljust(width)}{row['path']} · since {row['created']}\n")
    return 0


def _diff(repo: Repo, name: str, stat: bool) -> int:
    from ketch_worktree_kit import changes, find

    found = changes(repo, find(repo, name), patch=not stat)
    if stat or not found.files:
        _out(f"{name}: {found.stat()}\n")
        for status, path in found.files:
            _out(f"  {status} {path}\n")
        return 0
    _out(found.patch if found.patch.endswith("\n") else found.patch + "\n")
    return 0


def _merge(repo: Repo, name: str, squash: bool, message: str) -> int:
    from ketch_worktree_kit import find, merge

    result = merge(repo, find(repo, name), squash=squash, message=message)
    stream = sys.stdout if result.merged else sys.stderr
    print(f"ketch: {result.message}" if not result.merged else result.message, file=stream)
    for path in result.conflicts:
        print(f"  conflict: {path}", file=sys.stderr)
    if result.conflicts:
        print(
            f"  resolve it in the worktree (e.g. merge {repo.head()[:12]} into branch ketch/{name} there), "
            f"or merge by hand: git merge ketch/{name}",
            file=sys.stderr,
        )
    return 0 if result.merged else 1


def _remove(repo: Repo, name: str, force: bool) -> int:
    from ketch_worktree_kit import find, remove

    for line in remove(repo, find(repo, name), force=force):
        print(line)
    return 0
