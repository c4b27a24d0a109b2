"""Reading git's configuration as git itself reads it (includes followed), by running
``git config --list`` — which reads files and runs nothing — in the safe environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ketch_git_kit.env import GitDidNotRun, spawn


@dataclass(frozen=True)
class ConfigEntry:
    """One ``key = value`` as git resolved it. ``key`` is git's spelling (section and
    variable lower-cased, a subsection as written); ``value`` is None for a bare key
    (a boolean true); ``scope`` is git's (``local``, ``worktree``, ``global``,
    ``command``...), and an included file counts as the scope of the file including it;
    ``origin`` is the absolute path of the file it came from ("" when not a file)."""

    scope: str
    origin: str
    key: str
    value: str | None

    @property
    def section(self) -> str:
        return self.key.split(".", 1)[0].lower()

    @property
    def variable(self) -> str:
        return self.key.rsplit(".", 1)[-1].lower()

    @property
    def subsection(self) -> str | None:
        """The middle of ``section.subsection.variable``, as written; None without one."""
        parts = self.key.split(".")
        return ".".join(parts[1:-1]) if len(parts) > 2 else None


class ConfigUnreadable(GitDidNotRun):
    """git could not list the configuration (one line, for the person)."""


def parse_config_list(data: bytes, cwd: Path) -> list[ConfigEntry]:
    """``git config --list -z --show-origin --show-scope`` output as entries."""
    fields = data.split(b"\0")
    entries: list[ConfigEntry] = []
    index = 0
    while index + 2 < len(fields):
        scope = fields[index].decode("utf-8", "surrogateescape")
        origin = fields[index + 1].decode("utf-8", "surrogateescape")
        pair = fields[index + 2].decode("utf-8", "surrogateescape")
        index += 3
        key, newline, value = pair.partition("\n")
        if origin.startswith("file:"):
            path = origin[len("file:") :]
            origin = os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path))
        else:
            origin = ""
        entries.append(ConfigEntry(scope, origin, key, value if newline else None))
    return entries


def read_config(
    cwd: Path, *, git: str, environ: Mapping[str, str], timeout: float = 10.0
) -> list[ConfigEntry]:
    """Every entry git would use in ``cwd`` (outside a repository: the user's own only).

    Raises :class:`ConfigUnreadable` when git fails or takes longer than ``timeout``."""
    argv = [git, "config", "--list", "-z", "--show-origin", "--show-scope", "--includes"]
    try:
        done = spawn(argv, cwd, environ, timeout, "git config")
    except GitDidNotRun as exc:
        raise ConfigUnreadable(str(exc)) from None
    # Exit 1 with no output: no configuration at all (nothing set anywhere).
    if done.returncode not in (0, 1) or (done.returncode == 1 and done.stdout):
        err = done.stderr.decode("utf-8", "replace").strip().splitlines() or ["?"]
        raise ConfigUnreadable(f"git config failed: {err[-1][:200]}")
    return parse_config_list(done.stdout, cwd)
