"""``ketch -w NAME``: make (or reopen) the worktree, then run the session there.

The option chooses the ``worktree`` frontend (``--frontend``, which the CLI reads after
parsing; the name is ``ketch_frontend_kit.WORKTREE_FRONTEND``), keeping the frontend
that was chosen before (if any) for the session in the worktree. That frontend makes the worktree and hands the parsed options
to :func:`ketch_launch_kit.run_frontend`, which boots a kernel *in the worktree*: its
config layers, trust, commands, sandbox root, checkpoints and sessions are the
worktree's, as if ``ketch`` had been typed there. An option whose frontend
makes the worktree itself (``--background``: it sets ``MAKES_WORKTREE``) takes
precedence.
"""

from __future__ import annotations

import argparse
import copy
import sys
from typing import TYPE_CHECKING

from ketch_frontend_kit import WORKTREE_PREVIOUS as PREVIOUS

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel


def options_for_worktree(args: argparse.Namespace) -> argparse.Namespace:
    """The options the session in the worktree runs with: -w done, the frontend as
    chosen before it."""
    inner = copy.copy(args)
    inner.worktree = None
    inner.frontend = getattr(args, PREVIOUS, None)
    return inner


def run_in_worktree(kernel: Kernel) -> int:
    from ketch.api import KetchError
    from ketch_launch_kit import run_frontend
    from ketch_worktree_kit import Repo, WorktreeError, ensure, relative_start

    args = kernel.args
    name = getattr(args, "worktree", None)
    if not name:
        raise KetchError("the worktree frontend runs only with -w NAME", exit_code=2)
    try:
        repo = Repo.of(kernel.workspace, kernel.environ)
        record, made = ensure(repo, name)
        target = relative_start(repo, kernel.workspace, record)
    except WorktreeError as exc:
        raise KetchError(f"-w {name}: {exc}", exit_code=1) from None
    how = f"made from {record.base[:12]}" if made else "reopened"
    print(
        f"ketch: worktree {record.name} ({how}; branch {record.branch}) at {record.path}",
        file=sys.stderr,
    )
    return run_frontend(options_for_worktree(args), target, environ=kernel.environ)
