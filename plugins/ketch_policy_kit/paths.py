"""Path facts the guards, the policy and the tools agree on.

Paths are compared by component after resolving symlinks, so ``/w/proj-evil`` is not
inside ``/w/proj`` and a link to ``.git/config`` is a write to ``.git/config``.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ketch_policy_kit.protected import Protected

SECRET_PATTERNS = (
    ".env", ".env.*", "*.env", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_ed25519*",
    "id_ecdsa*", "id_dsa*", ".netrc", ".pgpass", "*.keystore", "*.jks", "credentials", "credentials.json",
    ".npmrc", ".pypirc", "secrets.*", "*.secret", "*.secrets", ".git-credentials", "*.kdbx", "*.gpg",
    "service-account*.json", "*.tfvars",
)  # fmt: skip
# Templates that only name the variables: not secrets.
NOT_SECRET = (".env.example", ".env.sample", ".env.template", ".env.dist", "*.pub")
# Directories whose every file is a secret.
SECRET_DIRS = frozenset(
    {".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store", "keyrings"}
)
PROCESS_SECRETS = frozenset({"environ", "mem", "auxv"})
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


def secret_name(name: str) -> bool:
    """Whether a file *name* (one component) looks like a secret."""
    lowered = name.lower()
    if any(fnmatch.fnmatchcase(lowered, pattern) for pattern in NOT_SECRET):
        return False
    return any(fnmatch.fnmatchcase(lowered, pattern) for pattern in SECRET_PATTERNS)


def looks_secret(path: PurePath) -> bool:
    name = path.name.lower()
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in NOT_SECRET):
        return False
    # A process's environment or memory: ketch's own holds the API keys
    # (/proc/self/... resolves to /proc/<pid>/...).
    if len(path.parts) >= 3 and path.parts[1] == "proc" and name in PROCESS_SECRETS:
        return True
    if any(part.lower() in SECRET_DIRS for part in path.parts[:-1]):
        return True
    return secret_name(name)


def ketch_config_dirs(workspace: Path) -> list[Path]:
    from ketch.paths import config_dir

    return [resolve(config_dir()), resolve(workspace / ".ketch")]


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
        return f"writes to ketch's own config, hooks or MCP settings ({path})"
    found = protected_component(path, root) or covering(path, extra)
    if found is not None:
        return f"writes to a protected path ({path}: {found.why})"
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
