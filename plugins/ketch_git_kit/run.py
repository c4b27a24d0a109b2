"""Running git for ketch itself, with every program a repository could name switched off.

What runs: the ``git`` found by :func:`~ketch_git_kit.locate.git_executable` (never one
from the workspace), in :func:`~ketch_git_kit.env.safe_environment`, with ``--no-pager``,
the :data:`~ketch_git_kit.env.FIXED` settings, and per name every filter driver
(``filter.NAME.clean/smudge/process`` emptied, ``required`` off) and diff or merge
driver (``textconv``/``command`` emptied; a merge driver replaced by git's own text
merge, ``git merge-file``, so a merge still merges and reports conflicts) that any
configuration git would read defines — the repository's, a file it includes, the
user's. The diff family (``diff``, ``log``, ``show``, ...) also gets ``--no-ext-diff
--no-textconv``. Includes
cannot be switched off by a setting; what they bring in is read first and switched off
like the rest (see docs/trust.md for the one gap this leaves).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ketch_git_kit.config import ConfigEntry, ConfigUnreadable, read_config
from ketch_git_kit.env import FIXED, GitDidNotRun, spawn
from ketch_git_kit.locate import git_executable

# Subcommands that can show a diff: they take --no-ext-diff and --no-textconv.
DIFF_FAMILY = frozenset(
    {
        "diff",
        "log",
        "show",
        "whatchanged",
        "diff-files",
        "diff-index",
        "diff-tree",
        "format-patch",
        "range-diff",
        "blame",
        "annotate",
    }
)
# blame/annotate take --no-textconv but not --no-ext-diff.
_NO_EXT_DIFF = DIFF_FAMILY - {"blame", "annotate"}
_DRIVER_KEYS = {
    "filter": (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")),
    "diff": (("textconv", ""), ("command", ""), ("cachetextconv", "false")),
    # An empty driver fails every merge of its files; git's own text merge (filled in
    # by overrides_for) merges them as if no driver were named, conflicts included.
    "merge": (("driver", ""),),
    "protocol": (("allow", "never"),),
}


@dataclass(frozen=True)
class GitRun:
    """What one git run gave: its exit code (None when it did not run or finish),
    its output, and ``problem``, one line saying why there is no exit code."""

    code: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    problem: str = ""

    @property
    def ok(self) -> bool:
        return self.code == 0

    def reason(self) -> str:
        """Why it failed, in one line."""
        if self.problem:
            return self.problem
        err = self.stderr.decode("utf-8", "replace").strip().splitlines()
        return (err[-1] if err else f"git exited with {self.code}")[:200]


class UnsafeConfiguration(Exception):
    """A driver name git's ``-c`` cannot switch off unambiguously."""


def text_merge(git: str) -> str:
    """A merge driver command line that is git's own three-way text merge."""
    return f"{shlex.quote(git)} merge-file --marker-size=%L -L ours -L base -L theirs %A %O %B"


def overrides_for(entries: Sequence[ConfigEntry], git: str = "git") -> list[tuple[str, str]]:
    """The fixed settings, then one group per filter/diff/merge driver and per
    transport (``protocol.NAME.allow``) that ``entries`` name. ``git``: the absolute
    path of the git that runs (a merge driver becomes its ``merge-file``)."""
    settings = list(FIXED)
    seen: set[tuple[str, str]] = set()
    for entry in entries:
        keys = _DRIVER_KEYS.get(entry.section)
        driver = entry.subsection
        if keys is None or driver is None or (entry.section, driver) in seen:
            continue
        seen.add((entry.section, driver))
        if "=" in driver or "\n" in driver:
            raise UnsafeConfiguration(
                f"the {entry.section} driver {driver!r} has a name git's -c cannot address"
            )
        for variable, value in keys:
            if (entry.section, variable) == ("merge", "driver"):
                value = text_merge(git)
            settings.append((f"{entry.section}.{driver}.{variable}", value))
    return settings


def command_line(git: str, args: Sequence[str], settings: Sequence[tuple[str, str]]) -> list[str]:
    argv = [git, "--no-pager"]
    for key, value in settings:
        argv += ["-c", f"{key}={value}"]
    args = list(args)
    if args and args[0] in DIFF_FAMILY:
        extra = ["--no-textconv"] + (["--no-ext-diff"] if args[0] in _NO_EXT_DIFF else [])
        args = [args[0], *extra, *args[1:]]
    return argv + args


# Transports a caller may open for one run (cloning a catalog the person asked for);
# ``ext::`` (which runs a command) never.
TRANSPORTS = frozenset({"file", "git", "http", "https", "ssh"})


def transport_settings(transports: Collection[str]) -> list[tuple[str, str]]:
    """The ``-c`` settings that open ``transports`` again (after :data:`FIXED` closed
    every one): ``protocol.NAME.allow=always``, and for ssh the person's own ``ssh``
    (never ``core.sshCommand`` from a repository)."""
    unknown = sorted(set(transports) - TRANSPORTS)
    if unknown:
        raise ValueError(f"transports ketch never opens: {', '.join(unknown)}")
    settings = [(f"protocol.{name}.allow", "always") for name in sorted(transports)]
    if "ssh" in transports:
        settings.append(("core.sshCommand", "ssh"))
    return settings


def run_git(
    args: Sequence[str],
    cwd: Path,
    *,
    environ: Mapping[str, str] | None = None,
    timeout: float = 10.0,
    avoid: Path | None = None,
    index_file: Path | None = None,
    transports: Collection[str] = (),
) -> GitRun:
    """Run ``git ARGS`` in ``cwd`` for ketch itself (never for the model: its commands go
    through the policy and the sandbox). ``avoid``: a directory git must not be taken
    from (the workspace; default ``cwd``). ``index_file``: an index of ketch's own
    (``GIT_INDEX_FILE``), so that staging a snapshot leaves the repository's index alone.
    ``transports``: the protocols this run may use (``file``, ``https``...; none by
    default: ``clone`` and ``fetch`` of a URL the person gave name theirs). Never raises
    for git's sake: a failure is a :class:`GitRun` with ``problem`` or a non-zero
    ``code``."""
    environ = os.environ if environ is None else environ
    git = git_executable(environ, avoid if avoid is not None else cwd)
    if git is None:
        return GitRun(None, problem="git is not installed")
    try:
        entries = read_config(cwd, git=git, environ=environ, timeout=timeout)
        settings = overrides_for(entries, git) + transport_settings(transports)
    except (ConfigUnreadable, UnsafeConfiguration) as exc:
        return GitRun(None, problem=str(exc))
    what = f"git {args[0]}" if args else "git"
    try:
        extra = {"GIT_INDEX_FILE": os.fspath(index_file)} if index_file is not None else None
        done = spawn(command_line(git, args, settings), cwd, environ, timeout, what, extra=extra)
    except GitDidNotRun as exc:
        return GitRun(None, problem=str(exc))
    return GitRun(done.returncode, done.stdout, done.stderr)
