"""The git kit: every git ketch runs for itself, and what a repository's config makes
git run. A library: it registers nothing.

**The guarantee.** A git that ketch runs on its own (the environment section's
``git status``, checkpoints, worktrees, anything a plugin needs) never executes a
program the workspace controls: no filter, fsmonitor hook, hook script, textconv,
external diff or merge driver, pager, editor, credential helper, ``core.sshCommand``,
proxy or transport command — whatever the repository's ``.git/config``, a file it
includes, ``.gitattributes`` or the user's own config say. :func:`run_git` is how:

    from ketch_git_kit import run_git
    run = run_git(["status", "--porcelain=v2", "-z"], workspace, environ=kernel.environ)
    if run.ok: ...            # else run.reason() says why, in one line

**What a repository names.** :func:`repository_programs` lists the programs (and
included files, and hook scripts) a repository's own configuration names: the trust
plugin shows them as items, and the shell policy asks before the model's ``git`` runs
in a repository that names one nobody trusted.

See docs/trust.md for the guarantee, what it rests on, and what it does not cover.
"""

from __future__ import annotations

from ketch_git_kit.config import ConfigEntry, ConfigUnreadable, read_config
from ketch_git_kit.env import FIXED, safe_environment
from ketch_git_kit.locate import Repository, find_repository, git_executable
from ketch_git_kit.programs import (
    Program,
    RepositoryPrograms,
    classify,
    hooks_directory,
    include_target,
    programs_in,
    repository_programs,
)
from ketch_git_kit.run import DIFF_FAMILY, GitRun, command_line, overrides_for, run_git

__all__ = [
    "DIFF_FAMILY",
    "FIXED",
    "ConfigEntry",
    "ConfigUnreadable",
    "GitRun",
    "Program",
    "Repository",
    "RepositoryPrograms",
    "classify",
    "command_line",
    "find_repository",
    "git_executable",
    "hooks_directory",
    "include_target",
    "overrides_for",
    "programs_in",
    "read_config",
    "repository_programs",
    "run_git",
    "safe_environment",
]
