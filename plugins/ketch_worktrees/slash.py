"""``/worktree NAME``: reopen the shell in worktree NAME; ``/worktree``: list them.

The shell moves by starting ketch again in the worktree, in place of this process
(``exec``), after ending this session (it stays saved): what the new shell reads —
config, trust, commands, checkpoints, sessions — is the worktree's, exactly as with
``ketch -w NAME``. Only the model, provider, mode and the profile given on the command
line carry over (never an approval). Where the frontend is not a terminal (an editor
over ACP), it only says how to open it.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import SlashContext


def reopen_argv(ctx: SlashContext, name: str) -> list[str]:
    session, args = ctx.session, ctx.kernel.args
    argv = [sys.executable, "-m", "ketch", "-w", name]
    argv += ["--provider", session.provider.name, "--model", session.model]
    if session.mode:
        argv += ["--mode", session.mode]
    profile = getattr(args, "profile", None)  # as the person typed it; never a raised one
    if profile:
        argv += ["--profile", profile]
    for item in getattr(args, "no_plugin", None) or []:
        argv += ["--no-plugin", str(item)]
    return argv


def run_slash(ctx: SlashContext) -> None:
    from ketch_worktree_kit import Repo, WorktreeError, all_of, ensure

    name = ctx.argument.strip()
    try:
        repo = Repo.of(ctx.kernel.workspace, ctx.kernel.environ)
        if not name:
            found = all_of(repo)
            if not found:
                ctx.print("no worktrees yet; /worktree NAME makes one and moves there")
            for record in found:
                ctx.print(f"{record.name}  {record.branch}  {record.path}")
            return
        record, made = ensure(repo, name)
    except WorktreeError as exc:
        ctx.print(f"/worktree: {exc}")
        return
    how = "made" if made else "found"
    if not (sys.stdin.isatty() and sys.stdout.isatty() and ctx.prefill is not None):
        ctx.print(f"worktree {record.name} {how} at {record.path}; open it with `ketch -w {name}`")
        return
    ctx.print(f"worktree {record.name} {how} at {record.path}; reopening the shell there")
    argv = reopen_argv(ctx, name)
    ctx.kernel.end(ctx.session, "worktree")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)
