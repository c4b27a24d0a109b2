"""Path facts the guards, the policy and the tools agree on.

Paths are compared by component after resolving symlinks, so ``/w/proj-evil`` is not
inside ``/w/proj`` and a link to ``.git/config`` is a write to ``.git/config``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ketch_policy_kit.protected import Protected

# Secrets by name live in the secret kit (one classification for every part of ketch).
from ketch_secret_kit.names import (  # noqa: E402
    NOT_SECRET as NOT_SECRET,
)
from ketch_secret_kit.names import (
    PROCESS_SECRETS as PROCESS_SECRETS,
)
from ketch_secret_kit.names import (
    SECRET_DIRS as SECRET_DIRS,
)
from ketch_secret_kit.names import (
    SECRET_PATTERNS as SECRET_PATTERNS,
)
from ketch_secret_kit.names import (
    looks_secret as looks_secret,
)
from ketch_secret_kit.names import (
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
    """ketch's own config (the user's and the workspace's) and its cache, whose files
    decide what a later start loads and sends (the plugin list, the tool schemas, the
    first request's record), wherever they are (a cache inside a workspace too)."""
    from ketch.api import cache_dir, config_dir

    return [resolve(config_dir()), resolve(workspace / ".ketch"), resolve(cache_dir())]


def write_guard(path: Path, workspace: Path, extra: Iterable[Protected] = ()) -> str | None:
    """Why a write to ``path`` (already resolved) must always ask, or None. ``extra``:
    the workspace's other protected paths (:mod:`ketch_policy_kit.protected`: a
    repository's hooks directory, what configured hooks and MCP servers execute)."""
    from ketch_policy_kit.protected import covering, protected_component

    root = resolve(workspace)
    lowered = [part.lower() for part in path.parts]
    if ".git" in lowered:
        return f"writes to git internals ({path})"
    if ".ketch" in lowered or any(is_within(path, d) for d in ketch_config_dirs(workspace)):
        return f"writes to ketch's own config, hooks, MCP settings or caches ({path})"
    found = protected_component(path, root) or covering(path, extra)
    if found is not None:
        return f"writes to a protected path ({path}: {found.why})"
    if not is_within(path, root):
        return f"writes outside the workspace ({path})"
    home = resolve(Path.home())
    if is_within(path, home) and path != home and path.relative_to(home).parts[0] in HOME_SENSITIVE:
        return f"writes to a shell startup file or key directory ({path})"
    return None
