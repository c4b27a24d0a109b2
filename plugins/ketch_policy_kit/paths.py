"""Path facts the guards, the policy and the tools agree on.

Paths are compared by component after resolving symlinks, so ``/w/proj-evil`` is not
inside ``/w/proj`` and a link to ``.git/config`` is a write to ``.git/config``.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path, PurePath

# Secrets by name live in the secret kit (one classification for every part of ketch).
from ketch_secret_kit.names import (  # noqa: E402
    NOT_SECRET as NOT_SECRET,
    PROCESS_SECRETS as PROCESS_SECRETS,
    SECRET_DIRS as SECRET_DIRS,
    SECRET_PATTERNS as SECRET_PATTERNS,
    looks_secret as looks_secret,
    secret_name as secret_name,
)

# Files under the home directory that run code or grant access when changed
# (they matter when the workspace is, or contains, the home directory).
HOME_SENSITIVE = frozenset(
    {".ssh", ".gnupg", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv",
     ".zprofile", ".zlogin", ".pam_environment"}
)  # fmt: skip


def resolve(path: str | os.PathLike[str]) -> Path:
    """Absolute and symlink-resolved (as far as the path exists)."""
    return Path(os.path.realpath(os.path.abspath(os.fspath(path))))


def is_within(path: Path, root: Path) -> bool:
    """Component-wise containment: /w/proj-evil is not within /w/proj."""
    return path.is_relative_to(root)


def ketch_config_dirs(workspace: Path) -> list[Path]:
    from ketch.paths import config_dir

    return [resolve(config_dir()), resolve(workspace / ".ketch")]


def write_guard(path: Path, workspace: Path) -> str | None:
    """Why a write to ``path`` (already resolved) must always ask, or None."""
    root = resolve(workspace)
    lowered = [part.lower() for part in path.parts]
    if ".git" in lowered:
        return f"writes to git internals ({path})"
    if ".ketch" in lowered or any(is_within(path, d) for d in ketch_config_dirs(workspace)):
        return f"writes to ketch's own config, hooks or MCP settings ({path})"
    if not is_within(path, root):
        return f"writes outside the workspace ({path})"
    home = resolve(Path.home())
    if is_within(path, home) and path != home and path.relative_to(home).parts[0] in HOME_SENSITIVE:
        return f"writes to a shell startup file or key directory ({path})"
    return None


MAX_TREE_ENTRIES = 20_000


def tree_secret(
    directory: str | os.PathLike[str], *, limit: int = MAX_TREE_ENTRIES, hidden: bool = True
) -> str | None:
    """The first secret-looking file under ``directory`` (a recursive read would read
    it), "" when there are too many entries to check, None when there is none.
    ``hidden=False``: entries whose name starts with '.', and symlinks, are skipped, as
    ``rg`` walks by default.
    ``.git`` directories are skipped (git's own objects are not files a reader greps
    by name); symlinks are not followed, but a link to a secret counts."""
    count = 0
    stack = [os.fspath(directory)]
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            count += 1
            if count > limit:
                return ""
            if entry.name == ".git" or (not hidden and entry.name.startswith(".")):
                continue
            path = Path(entry.path)
            try:
                if entry.is_symlink():
                    if hidden and (looks_secret(resolve(path)) or looks_secret(path)):
                        return str(path)
                    continue
                if entry.is_dir():
                    if entry.name.lower() in SECRET_DIRS:
                        return str(path)
                    stack.append(entry.path)
                elif looks_secret(path):
                    return str(path)
            except OSError:
                continue
    return None
