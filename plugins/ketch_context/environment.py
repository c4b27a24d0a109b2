"""Environment facts for the system prompt: directory, OS, shell, date, git state.

Taken once per session (a snapshot: a stable system prompt keeps provider prompt
caches warm); the model is told it is a snapshot.

git runs through :mod:`ketch_git_kit` (a short timeout, a clean environment, optional
locks off, and every program a repository could name switched off: filters, fsmonitor,
hooks, textconv, pager...): a repository must not get to run a program just because
ketch looked at it.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

MAX_PATHS = 10


@dataclass
class GitState:
    branch: str = ""
    ahead: int = 0
    behind: int = 0
    staged: int = 0
    modified: int = 0
    untracked: int = 0
    conflicted: int = 0
    paths: list[str] = field(default_factory=list)

    def summary(self) -> str:
        where = (
            f"on branch {self.branch}"
            if self.branch and self.branch != "(detached)"
            else "detached HEAD"
        )
        if self.ahead or self.behind:
            where += f" (ahead {self.ahead}, behind {self.behind})"
        counts = [
            f"{n} {what}"
            for n, what in (
                (self.staged, "staged"),
                (self.modified, "modified"),
                (self.untracked, "untracked"),
                (self.conflicted, "conflicted"),
            )
            if n
        ]
        if not counts:
            return where + "; working tree clean"
        shown = ", ".join(self.paths[:MAX_PATHS]) + (" …" if len(self.paths) > MAX_PATHS else "")
        return f"{where}; {', '.join(counts)}: {shown}"


def git_status(
    workspace: Path, timeout: float, environ: Mapping[str, str] | None = None
) -> GitState | str:
    """The repository's state, or a short reason there is none."""
    from ketch_git_kit import run_git

    args = [
        "status",
        "--porcelain=v2",
        "--branch",
        "-z",
        "--untracked-files=normal",
        "--ignore-submodules=all",
    ]
    done = run_git(args, workspace, environ=environ, timeout=timeout)
    if done.problem:
        return done.problem + ("; skipped" if "took over" in done.problem else "")
    if not done.ok:
        err = done.stderr.decode("utf-8", "replace")
        return (
            "not a git repository"
            if "not a git repository" in err
            else "git status failed: " + done.reason()
        )
    return parse_porcelain(done.stdout.decode("utf-8", "replace"))


def parse_porcelain(output: str) -> GitState:
    """Parse ``git status --porcelain=v2 --branch -z``."""
    state = GitState()
    fields = output.split("\0")
    index = 0
    while index < len(fields):
        entry = fields[index]
        index += 1
        if entry.startswith("# branch.head "):
            state.branch = entry[len("# branch.head ") :]
        elif entry.startswith("# branch.ab "):
            parts = entry.split()
            with contextlib.suppress(IndexError, ValueError):
                state.ahead, state.behind = abs(int(parts[2])), abs(int(parts[3]))
        elif entry.startswith(("1 ", "2 ")):
            parts = entry.split(" ", 8 if entry[0] == "1" else 9)
            xy = parts[1]
            state.staged += xy[0] != "."
            state.modified += xy[1] != "."
            state.paths.append(parts[-1])
            if entry[0] == "2":
                index += 1  # a rename carries its original path as the next field
        elif entry.startswith("u "):
            state.conflicted += 1
            state.paths.append(entry.split(" ", 10)[-1])
        elif entry.startswith("? "):
            state.untracked += 1
            state.paths.append(entry[2:])
    return state


def shell_name(environ: Mapping[str, str]) -> str:
    shell = environ.get("SHELL") or environ.get("COMSPEC") or ""
    return Path(shell).name if shell else "unknown"


def environment_text(
    workspace: Path,
    *,
    git_timeout: float,
    environ: Mapping[str, str] | None = None,
    today: datetime.date | None = None,
) -> str:
    environ = os.environ if environ is None else environ
    today = today or datetime.date.today()
    system = platform.system() or "unknown"
    release = platform.release()
    git = git_status(workspace, git_timeout, environ)
    lines = [
        f"Working directory: {workspace}",
        f"Platform: {system} {release} ({platform.machine() or '?'})".replace("  ", " "),
        f"Shell: {shell_name(environ)}",
        f"Date: {today.isoformat()} ({today.strftime('%A')})",
        f"Git: {git.summary() if isinstance(git, GitState) else git}",
    ]
    return (
        "\n".join(lines)
        + "\n(A snapshot from the start of the session; it does not update as files change.)"
    )
