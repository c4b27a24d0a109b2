"""Which workspace a worktree's trust comes from.

A linked git worktree (``git worktree add``, ``ketch -w NAME``) holds a checkout of the
same repository as its main work tree. Pins are by content (an item's digest covers
what it runs and the workspace files it names, by workspace-relative path), so the
pins of the main work tree are safe to honour there too: an item that is *identical*
in the worktree has the same digest and counts as trusted; one that differs (a hook
script the worktree's session rewrote) has another digest and is held back.

The link is checked both ways, from files a tool call cannot write (the worktree's
``.git`` file and the repository's ``.git/worktrees/NAME/gitdir`` are protected paths
in the sandbox and the hard guards): the worktree's ``.git`` names a git directory
whose ``gitdir`` names this very ``.git``, which lies in ``worktrees/`` of the main
work tree's ``.git``, and whose ``commondir`` is that ``.git``. A git directory made up
elsewhere (in a folder a tool call can write) links nothing. Nothing else makes a
workspace inherit pins.
"""

from __future__ import annotations

import os
from pathlib import Path


def _read_line(path: Path) -> str:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            return handle.readline().strip()
    except OSError:
        return ""


def _linked(top: Path) -> Path | None:
    """The main work tree of the repository ``top`` is a linked worktree of; else None."""
    dotgit = top / ".git"
    if dotgit.is_symlink() or not dotgit.is_file():
        return None
    line = _read_line(dotgit)
    if not line.startswith("gitdir:"):
        return None
    gitdir = Path(os.path.realpath(top / line[len("gitdir:") :].strip()))
    back = _read_line(gitdir / "gitdir")
    if not back or os.path.realpath(back) != os.path.realpath(dotgit):
        return None
    common = _read_line(gitdir / "commondir")
    if not common:
        return None
    common_dir = Path(os.path.realpath(gitdir / common))
    if common_dir.name != ".git" or os.path.realpath(common_dir.parent / ".git") != str(common_dir):
        return None
    if gitdir.parent != common_dir / "worktrees":
        return None  # git keeps a worktree's records there; anywhere else is made up
    main = common_dir.parent
    return None if main == top else main


def trust_parent(workspace: Path | str) -> Path | None:
    """The workspace whose pins also apply in ``workspace``: the same folder of the main
    work tree when ``workspace`` is in a linked worktree; None otherwise."""
    start = Path(os.path.realpath(os.path.abspath(os.fspath(workspace))))
    for top in (start, *start.parents):
        if os.path.lexists(top / ".git"):
            main = _linked(top)
            return None if main is None else main / start.relative_to(top)
    return None
