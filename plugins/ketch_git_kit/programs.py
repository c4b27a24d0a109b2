"""Which programs a repository's configuration names: what git could run on its say.

:func:`programs_in` classifies configuration entries (from any scope) into
:class:`Program` s: every key whose value is a command or a program git starts
(filters, fsmonitor, diff and merge drivers, textconv, pagers, editors, ssh, proxies,
credential helpers, signing programs, ``!`` aliases and submodule updates, transports
that run commands), plus the keys that change what git reads or where it works
(``include.path``, ``includeIf.*.path``, ``core.worktree``, ``core.hooksPath``).

:func:`repository_programs` is what a *repository* contributes: the entries of its own
config files (local and worktree scope, and the files they include), and the hook
scripts git would run from its hooks directory. A user's ``~/.gitconfig`` and the
system's are theirs, not the repository's, and are not listed. The answer is cached
while none of the files it came from changes (a policy asks it for every git command).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ketch_git_kit.config import ConfigEntry, ConfigUnreadable, read_config
from ketch_git_kit.env import safe_environment
from ketch_git_kit.locate import Repository, find_repository, git_executable

# section.variable (no subsection) -> what the program is.
PLAIN = {
    "core.fsmonitor": "fsmonitor hook",
    "core.hookspath": "hooks directory",
    "core.pager": "pager",
    "core.editor": "editor",
    "core.askpass": "password prompt program",
    "core.sshcommand": "ssh command",
    "core.gitproxy": "proxy command",
    "core.alternaterefscommand": "alternate refs command",
    "core.worktree": "work tree elsewhere",
    "sequence.editor": "rebase editor",
    "diff.external": "external diff",
    "diff.tool": "diff tool",
    "merge.tool": "merge tool",
    "gpg.program": "signing program",
    "credential.helper": "credential helper",
    "interactive.difffilter": "diff filter of add -p",
    "web.browser": "browser",
    "man.viewer": "manual viewer",
    "imap.tunnel": "imap tunnel",
    "sendemail.sendmailcmd": "mail command",
    "sendemail.tocmd": "recipients command",
    "sendemail.cccmd": "recipients command",
    "sendemail.headercmd": "header command",
    "uploadpack.packobjectshook": "pack-objects hook",
    "include.path": "included config file",
    "ssh.variant": "ssh variant",
}
# (section, variable) of section.SUBSECTION.variable -> what the program is.
NAMED = {
    ("filter", "clean"): "clean filter",
    ("filter", "smudge"): "smudge filter",
    ("filter", "process"): "filter process",
    ("diff", "textconv"): "textconv",
    ("diff", "command"): "diff driver",
    ("merge", "driver"): "merge driver",
    ("gpg", "program"): "signing program",
    ("credential", "helper"): "credential helper",
    ("difftool", "cmd"): "diff tool",
    ("difftool", "path"): "diff tool",
    ("mergetool", "cmd"): "merge tool",
    ("mergetool", "path"): "merge tool",
    ("browser", "cmd"): "browser",
    ("browser", "path"): "browser",
    ("man", "cmd"): "manual viewer",
    ("man", "path"): "manual viewer",
    ("trailer", "command"): "trailer command",
    ("trailer", "cmd"): "trailer command",
    ("remote", "uploadpack"): "remote upload-pack",
    ("remote", "receivepack"): "remote receive-pack",
    ("remote", "vcs"): "remote helper",
    ("tar", "command"): "archive filter",
    ("guitool", "cmd"): "gui tool",
    ("includeif", "path"): "conditionally included config file",
}
_FALSE = frozenset({"", "false", "no", "off", "0"})
_BOOLEAN = _FALSE | {"true", "yes", "on", "1"}


@dataclass(frozen=True)
class Program:
    """A program (or a file of configuration) git takes from its configuration."""

    key: str  # git's spelling of the key
    value: str
    what: str  # "clean filter", "fsmonitor hook", ...
    scope: str  # local, worktree, global, ...
    origin: str  # the file it is set in ("" when not a file)

    @property
    def driver(self) -> str | None:
        """The driver a filter/diff/merge program belongs to (its subsection)."""
        parts = self.key.split(".")
        return ".".join(parts[1:-1]) if len(parts) > 2 else None

    def describe(self) -> str:
        return f"{self.what}: {self.key} = {self.value}"


def classify(entry: ConfigEntry) -> str | None:
    """What program ``entry`` names, or None when it names none."""
    value = entry.value if entry.value is not None else ""
    section, variable, sub = entry.section, entry.variable, entry.subsection
    if sub is None:
        if section == "alias":
            return "shell alias" if value.lstrip().startswith("!") else None
        if section == "pager":
            return "pager" if value.strip().lower() not in _BOOLEAN else None
        what = PLAIN.get(f"{section}.{variable}")
        if what is None:
            return None
        if section == "core" and variable == "fsmonitor" and value.strip().lower() in _FALSE:
            return None
        if not value.strip() and variable not in ("fsmonitor",):
            return None  # an empty value resets a list or switches it off
        return what
    if (section, variable) in NAMED:
        return NAMED[(section, variable)] if value.strip() else None
    if section == "submodule" and variable == "update" and value.lstrip().startswith("!"):
        return "submodule update command"
    if section == "remote" and variable in ("url", "pushurl") and value.startswith("ext::"):
        return "transport command"
    if section == "protocol" and variable == "allow" and value.strip().lower() == "always":
        return "transport allowed"
    return None


def programs_in(entries: list[ConfigEntry]) -> list[Program]:
    found = []
    for entry in entries:
        what = classify(entry)
        if what is not None:
            found.append(Program(entry.key, entry.value or "", what, entry.scope, entry.origin))
    return found


@dataclass(frozen=True)
class RepositoryPrograms:
    """What one repository contributes: programs in its own config (and the files those
    include) and the hook scripts in its hooks directory. ``problem``: why the config
    could not be read (then nothing is known, and a caller must not assume it is clean)."""

    repository: Repository | None
    programs: tuple[Program, ...] = ()
    hooks: tuple[Path, ...] = ()
    files: tuple[str, ...] = ()  # every file the answer depends on
    problem: str = ""
    entries: tuple[ConfigEntry, ...] = field(default=(), repr=False)
    stamp: tuple[object, ...] = field(default=(), repr=False, compare=False)

    def __bool__(self) -> bool:
        return bool(self.programs or self.hooks or self.problem)


REPOSITORY_SCOPES = frozenset({"local", "worktree"})
_MEMO_SIZE = 32
# A bounded memo, like ``functools.lru_cache``: an answer is reused only while none of
# the files it depends on has changed (their stat data is its stamp).
_MEMO: dict[tuple[str, str, tuple[tuple[str, str], ...]], RepositoryPrograms] = {}


def _stat_key(paths: tuple[str, ...]) -> tuple[object, ...]:
    key: list[object] = []
    for path in paths:
        try:
            info = os.stat(path)
            key.append((path, info.st_mtime_ns, info.st_size, info.st_ino))
        except OSError:
            key.append((path, None))
    return tuple(key)


def _hook_scripts(directory: Path) -> tuple[Path, ...]:
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return ()
    found = []
    for name in names:
        path = directory / name
        if name.endswith(".sample") or name.startswith("."):
            continue
        if path.is_file() and os.access(path, os.X_OK):
            found.append(path)
    return tuple(found)


def hooks_directory(repo: Repository, programs: tuple[Program, ...] | list[Program]) -> Path:
    """Where git looks for hooks: ``core.hooksPath`` (relative to the work tree) or the
    common git directory's ``hooks``."""
    configured = [p for p in programs if p.key.lower() == "core.hookspath"]
    if configured:
        value = os.path.expanduser(configured[-1].value)
        base = repo.work_tree or repo.git_dir
        return Path(value if os.path.isabs(value) else os.path.join(base, value))
    return repo.hooks_dir()


def include_target(program: Program) -> str | None:
    """The file an ``include.path``/``includeIf.*.path`` names, resolved as git does
    (relative to the including file); it may not exist (yet)."""
    if program.what not in (PLAIN["include.path"], NAMED[("includeif", "path")]):
        return None
    value = os.path.expanduser(program.value)
    if os.path.isabs(value) or not program.origin:
        return os.path.normpath(value)
    return os.path.normpath(os.path.join(os.path.dirname(program.origin), value))


def _compute(start: Path, git: str, environ: Mapping[str, str]) -> RepositoryPrograms:
    repo = find_repository(start)
    if repo is None:
        return RepositoryPrograms(None)
    base = tuple(str(p) for p in repo.config_files()) + (str(repo.git_dir / "HEAD"),)
    before = _stat_key(base)  # taken before reading: a change while git reads shows later
    try:
        entries = read_config(start, git=git, environ=environ)
    except ConfigUnreadable as exc:
        return RepositoryPrograms(repo, files=base, problem=str(exc), stamp=before)
    own = tuple(e for e in entries if e.scope in REPOSITORY_SCOPES)
    programs = tuple(programs_in(list(own)))
    hooks_dir = hooks_directory(repo, programs)
    hooks = _hook_scripts(hooks_dir)
    targets = {t for t in (include_target(p) for p in programs) if t}
    included = {e.origin for e in own if e.origin} | targets
    files = (
        base
        + tuple(sorted(included - set(base)))
        + (str(hooks_dir),)
        + tuple(str(h) for h in hooks)
    )
    stamp = before + _stat_key(files[len(base) :])
    return RepositoryPrograms(repo, programs, hooks, files, entries=own, stamp=stamp)


def repository_programs(
    start: Path, environ: Mapping[str, str] | None = None, *, avoid: Path | None = None
) -> RepositoryPrograms:
    """The programs the repository of ``start`` names in its own configuration, and its
    hook scripts (an empty answer outside a repository). ``avoid``: a directory git
    itself must not be taken from (the workspace)."""
    environ = dict(os.environ if environ is None else environ)
    where = Path(os.path.abspath(start))
    git = git_executable(environ, avoid)
    if git is None:
        repo = find_repository(where)
        return RepositoryPrograms(repo, problem="git is not installed" if repo else "")
    # Keyed by everything git is given (its whole environment, see env.py): the
    # answer is then the same for every kernel in the process.
    key = (str(where), git, tuple(sorted(safe_environment(environ).items())))
    known = _MEMO.get(key)
    if known is not None and _stat_key(known.files) == known.stamp:
        return known
    found = _compute(where, git, environ)
    _MEMO.pop(key, None)
    while len(_MEMO) >= _MEMO_SIZE:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[key] = found
    return found
