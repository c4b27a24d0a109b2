"""Running git read-only and safely on a repository ketch does not trust.

A repository's own ``.git/config`` can name programs git runs during "read-only"
commands: ``core.fsmonitor`` (on every status), clean/smudge filters and textconv
drivers (whenever file content is compared), external diff drivers, a pager, gpg for
signatures. Whoever prepared the checkout chooses them, so every such key found in
the effective config is overridden with ``-c KEY=`` before the real command runs, on
top of fixed overrides (no pager, no fsmonitor, no signature checks), and every
command that can diff gets ``--no-ext-diff --no-textconv``.

Arguments the model chose never reach git as options: revisions go after
``--end-of-options`` and must not start with ``-``; paths go after ``--``, must stay
inside the workspace, and are taken literally (``--literal-pathspecs``), never as
pathspec magic.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

TIMEOUT_S = 20.0
MAX_OUTPUT_CHARS = 40_000

# Options that hold for every command: no pager, colour, fsmonitor, signature checks,
# optional locks; paths are literal, and file names are printed as they are.
BASE_OPTIONS = (
    "--no-pager",
    "--literal-pathspecs",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.pager=cat",
    "-c",
    "core.quotePath=false",
    "-c",
    "color.ui=never",
    "-c",
    "log.showSignature=false",
)

# Config keys (as ``git config --name-only`` prints them: section and key lowercase)
# whose value is a program git may run during a read command.
_PROGRAM_KEYS = re.compile(
    r"^(filter\..+\.(clean|smudge|process)"
    r"|diff\..+\.(textconv|command)"
    r"|core\.(fsmonitor|pager|sshcommand|askpass|gitproxy|hookspath)"
    r"|pager\..+"
    r"|gpg(\..+)?\.program"
    r"|credential(\..+)?\.helper)$"
)

# A revision: a ref name, a hash, HEAD~2, main..topic, v1.0^{commit}, @{u}... but no
# option, no whitespace or control characters, and no pathspec-ish colon magic.
_REVISION = re.compile(r"^[^\s\x00-\x1f\x7f-][^\s\x00-\x1f\x7f]{0,250}$")


class GitError(Exception):
    """A failure to report to the model as the tool's error (one line, actionable)."""


@dataclass
class GitOutput:
    text: str
    truncated: int = 0  # characters left out


def git_executable() -> str:
    found = shutil.which("git")
    if found is None:
        raise GitError("git is not installed (or not on PATH); the git tools need it")
    return found


def check_revision(rev: str, what: str = "revision") -> str:
    if not _REVISION.match(rev):
        raise GitError(
            f"invalid {what} {rev!r}: expected a ref, hash or range (no spaces, not starting with '-')"
        )
    return rev


def relative_path(workspace: Path, path: str) -> str:
    """``path`` relative to the workspace; anything that leaves it is refused."""
    if "\x00" in path:
        raise GitError(f"invalid path {path!r}")
    root = workspace.resolve()
    target = (root / path).resolve() if not Path(path).is_absolute() else Path(path).resolve()
    try:
        rel = target.relative_to(root)
    except ValueError:
        raise GitError(
            f"path {path!r} is outside the workspace ({root}); the git tools only read inside it"
        ) from None
    return rel.as_posix() or "."


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",  # a status must not take the index lock
            "GIT_ASKPASS": "",
            "SSH_ASKPASS": "",
            "LC_ALL": "C.UTF-8",
        }
    )
    return env


async def _exec(argv: list[str], cwd: Path, timeout: float) -> tuple[int, bytes, bytes]:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=str(cwd),
        env=_environment(),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # no controlling terminal: git can never prompt
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except (TimeoutError, asyncio.CancelledError) as exc:
        proc.kill()
        await proc.wait()
        if isinstance(exc, asyncio.CancelledError):
            raise
        raise GitError(
            f"git {argv[-1] if argv else ''} took longer than {timeout:.0f} s and was stopped"
        ) from None
    return proc.returncode or 0, out, err


async def neutralizers(git: str, cwd: Path, timeout: float = TIMEOUT_S) -> list[str]:
    """``-c KEY=`` for every config key in effect that names a program to run."""
    code, out, _ = await _exec(
        [git, "--no-pager", "config", "--null", "--name-only", "--list"], cwd, timeout
    )
    if code != 0:
        return []
    options: list[str] = []
    for key in sorted({k for k in out.decode("utf-8", "replace").split("\x00") if k}):
        if _PROGRAM_KEYS.match(key.lower()):
            options += ["-c", f"{key}="]
    return options


async def run_git(
    workspace: Path, args: list[str], *, timeout: float = TIMEOUT_S, limit: int = MAX_OUTPUT_CHARS
) -> GitOutput:
    """Run ``git <args>`` in ``workspace`` with the safety options; raise GitError on failure."""
    git = git_executable()
    if not workspace.is_dir():
        raise GitError(f"the workspace {workspace} is not a directory")
    # The fixed options come after the neutralizers: for a key in both, the last -c wins.
    argv = [git, *(await neutralizers(git, workspace, timeout)), *BASE_OPTIONS, *args]
    code, out, err = await _exec(argv, workspace, timeout)
    if code != 0:
        message = (
            " ".join(err.decode("utf-8", "replace").split()) or f"git exited with status {code}"
        )
        if "not a git repository" in message:
            message = f"{workspace} is not inside a git repository"
        raise GitError(message[:500])
    text = out.decode("utf-8", "replace")
    if len(text) > limit:
        return GitOutput(text=text[:limit], truncated=len(text) - limit)
    return GitOutput(text=text)
