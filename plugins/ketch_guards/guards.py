"""The guard checks themselves (pure functions of a call and a snapshot)."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path, PurePath

from ketch.policy import PermissionSnapshot, ProposedCall, Vote
from ketch.tools import Effect

SECRET_PATTERNS = (
    ".env", ".env.*", "*.env", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_ed25519*",
    "id_ecdsa*", "id_dsa*", ".netrc", ".pgpass", "*.keystore", "credentials", "credentials.json",
    ".npmrc", ".pypirc", "secrets.*", "*.secret", "*.secrets",
)


def resolve(path: str | os.PathLike[str]) -> Path:
    """Absolute and symlink-resolved (as far as the path exists)."""
    return Path(os.path.realpath(os.path.abspath(os.fspath(path))))


def is_within(path: Path, root: Path) -> bool:
    """Component-wise containment: /w/proj-evil is not within /w/proj."""
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def looks_secret(path: PurePath) -> bool:
    name = path.name.lower()
    return any(fnmatch.fnmatch(name, pattern) for pattern in SECRET_PATTERNS)


def ketch_config_dirs(workspace: Path) -> list[Path]:
    from ketch.paths import config_dir

    return [resolve(config_dir()), resolve(workspace / ".ketch")]


def check_access(effect: Effect, target: str, workspace: Path) -> str | None:
    """Why this access must ask, or None when the guards have nothing to say."""
    if effect not in (Effect.READ, Effect.WRITE):
        return None
    path = resolve(target)
    root = resolve(workspace)
    inside = is_within(path, root)
    if effect == Effect.WRITE:
        if not inside:
            return f"writes outside the workspace ({path})"
        rel = path.relative_to(root)
        if rel.parts and rel.parts[0] == ".git":
            return f"writes to git internals ({rel})"
        for guarded in ketch_config_dirs(workspace):
            if is_within(path, guarded):
                return f"writes to ketch's own config, hooks or MCP settings ({path})"
        return None
    if not inside:
        return f"reads outside the workspace ({path})"
    if looks_secret(path):
        return f"reads a file that looks like a secret ({path.name})"
    return None


def vote(call: ProposedCall, snapshot: PermissionSnapshot) -> Vote | None:
    reasons = [r for a in call.accesses if (r := check_access(a.effect, a.target, snapshot.workspace))]
    if not reasons:
        return None
    return Vote(decision="ask", reason="; ".join(dict.fromkeys(reasons)), plugin="guards")
