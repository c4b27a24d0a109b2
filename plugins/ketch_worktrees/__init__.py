"""Worktree sessions: ``ketch -w NAME`` runs a session in a git worktree of its own, on a
branch of its own (``ketch/NAME``), outside the repository; ``ketch worktrees
list|diff|merge|remove`` shows, merges back and cleans up; ``/worktree NAME`` moves the
shell there; the ``worktree_merge`` tool lets the model merge a subagent's worktree,
with the person's approval. The git work is ``ketch_worktree_kit``'s (nothing a
repository names runs); see docs/parallel.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl, provides

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Command, Frontend, Kernel


from ketch_frontend_kit import MAKES_WORKTREE
from ketch_frontend_kit import WORKTREE_FRONTEND as FRONTEND
from ketch_frontend_kit import WORKTREE_PREVIOUS as PREVIOUS


class WorktreeOption(argparse.Action):
    """``-w NAME``: the worktree frontend, the one chosen before it kept (here, light:
    the parser is built at every start)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        current = getattr(namespace, "frontend", None)
        if current == FRONTEND or getattr(namespace, MAKES_WORKTREE, False):
            return  # a frontend that makes the -w worktree itself (--background) stays
        setattr(namespace, PREVIOUS, current)
        namespace.frontend = FRONTEND


@hookimpl
def ketch_add_cli_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-w",
        "--worktree",
        metavar="NAME",
        action=WorktreeOption,
        help="run the session in git worktree NAME (made on branch ketch/NAME if new; "
        "`ketch worktrees` lists, merges and removes them)",
    )


@hookimpl
@provides("worktree")
def ketch_register_frontends(register: Callable[[Frontend], None]) -> None:
    from ketch.api import Frontend

    def run(kernel: Kernel) -> int:
        from ketch_worktrees.launch import run_in_worktree

        return run_in_worktree(kernel)

    register(Frontend(name=FRONTEND, run=run, help="ketch -w NAME: the session in a worktree"))


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    from ketch.api import Command

    def run(kernel: Kernel, args: argparse.Namespace) -> int:
        from ketch_worktrees.cli import run as real

        return real(kernel, args)

    def slash(ctx: Any) -> Any:
        from ketch_worktrees.slash import run_slash

        return run_slash(ctx)

    register(
        Command(
            name="worktrees",
            help="this repository's worktrees: list, diff NAME, merge NAME [--squash], remove NAME",
            cli=True,
            configure=configure,
            run=run,
        )
    )
    register(
        Command(
            name="worktree",
            help="/worktree NAME: reopen the shell in worktree NAME (made if new); /worktree lists them",
            slash=True,
            slash_run=slash,
        )
    )


@hookimpl
@provides("worktree_merge")
def ketch_register_tools(register: Callable[[Any], None]) -> None:
    from ketch_worktrees.tool import MergeTool

    register(MergeTool())


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="worktrees_action", metavar="ACTION")
    listing = sub.add_parser("list", help="every worktree of this repository, with its changes")
    listing.add_argument("--json", action="store_true", help="as JSON")
    diff = sub.add_parser("diff", help="what worktree NAME changed (its edits included)")
    diff.add_argument("name")
    diff.add_argument("--stat", action="store_true", help="only the files and line counts")
    merge = sub.add_parser(
        "merge", help="merge worktree NAME into the checked-out branch (conflicts change nothing)"
    )
    merge.add_argument("name")
    merge.add_argument(
        "--squash", action="store_true", help="one commit with all its changes, not a merge"
    )
    merge.add_argument("-m", "--message", default="", help="the commit message")
    remove = sub.add_parser("remove", help="remove worktree NAME and its branch")
    remove.add_argument("name")
    remove.add_argument(
        "--force", action="store_true", help="also when it holds changes not merged yet"
    )
