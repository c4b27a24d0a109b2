"""Secrets by name: file names and directories that hold credentials whatever they contain.

A name is compared lowercased, after the decorations editors and people add to a copy
are taken off (``.env~``, ``#.env#``, ``.env.bak``, ``env.old``, ``.env.swp``): a backup
of a secret is a secret. Templates that only name the variables (``.env.example``) are
not.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache, lru_cache
from pathlib import PurePath

# Environment variables: one classifier for every part of ketch (stdlib only, so the
# console script's launch uses it too); re-exported here for redaction.
from ketch_process_kit.variables import secret_variable as secret_variable

SECRET_PATTERNS = (
    # dotenv files and their spellings
    ".env", ".env.*", ".env-*", ".env_*", "*.env", ".envrc", "dotenv", ".flaskenv",
    # keys and certificates with their private half
    "*.pem", "*.key", "*.p12", "*.pfx", "*.ppk", "*.keystore", "*.jks", "*.p8", "*.kdbx", "*.gpg",
    "id_rsa*", "id_ed25519*", "id_ecdsa*", "id_dsa*", "identity",
    # credential files of tools and services
    ".netrc", "_netrc", ".pgpass", ".my.cnf", ".mylogin.cnf", ".s3cfg", ".boto", ".passwd-s3fs",
    ".git-credentials", ".npmrc", ".pypirc", ".dockercfg", ".htpasswd", ".vault-token", "auth.json",
    "credentials", "credentials.*", "*.credentials", "*credentials.json", "client_secret*.json",
    "service-account*.json", "secrets.*", "secret.*", "*.secret", "*.secrets",
    # infrastructure state and cluster access
    "*.tfvars", "*.tfstate", "*.tfstate.*", "kubeconfig", "kubeconfig.*", "*.kubeconfig",
    # shell and client histories (commands typed with passwords in them)
    ".*_history", ".lesshst", ".viminfo",
)  # fmt: skip
# Templates that only name the variables: not secrets.
NOT_SECRET = (
    ".env.example", ".env.sample", ".env.template", ".env.dist", ".env.defaults", "*.pub",
    "*.example", "*.sample", "*.template",
)  # fmt: skip
# Directories whose every file is a secret.
SECRET_DIRS = frozenset(
    {".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store", "keyrings", ".terraform.d"}
)  # fmt: skip
# Process files that hold another process's secrets (its environment, its memory).
PROCESS_SECRETS = frozenset({"environ", "mem", "auxv"})

# What a copy of a file adds to its name: editors' backups and swap files, people's
# ".bak"/".old" copies. Taken off (repeatedly) before the name is compared.
_DECORATION = re.compile(
    r"^(?P<core>.+?)(?:~|\.(?:bak|backup|old|orig|save|sav|swp|swo|swn|tmp|temp|copy|prev|\d+))$"
)
# "env.bak" is a backup of an environment file; "env" alone (a venv directory, a
# module) is not a secret, so it counts only once a decoration was taken off.
_BARE_WHEN_COPIED = frozenset({"env", "dotenv", "secrets", "credentials"})


def _cores(name: str) -> list[str]:
    """The name, and what it was a copy of (decorations off, one by one)."""
    cores = [name]
    current = name
    if len(current) > 2 and current.startswith("#") and current.endswith("#"):
        current = current[1:-1]  # emacs auto-save: #.env#
        cores.append(current)
    if current.startswith(".#"):
        current = current[2:]  # emacs lock file: .#.env
        cores.append(current)
    for _ in range(4):
        match = _DECORATION.match(current)
        if match is None:
            break
        current = match.group("core")
        cores.append(current)
    if current.startswith(".") and current.endswith(".swp"):
        cores.append(current[1:])
    return cores


@cache
def _matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """The globs as one compiled expression (the glob module's), built on first use."""
    from ketch_policy_kit.globs import names_matcher

    return names_matcher(patterns)


@lru_cache(maxsize=1 << 16)
def template_name(name: str) -> bool:
    """A template that only names the variables (``.env.example``, ``id_rsa.pub``)."""
    return _matcher(NOT_SECRET)(name.lower())


@lru_cache(maxsize=1 << 16)
def secret_name(name: str) -> bool:
    """Whether a file *name* (one component) looks like a secret."""
    lowered = name.lower()
    if template_name(lowered):
        return False
    for index, core in enumerate(_cores(lowered)):
        if index and core in _BARE_WHEN_COPIED:
            return True
        if index and _matcher(NOT_SECRET)(core):
            continue
        if _matcher(SECRET_PATTERNS)(core):
            return True
    return False


def looks_secret(path: PurePath | str) -> bool:
    """Whether a path looks like a secret by its name or the directory it is in."""
    parts = (path if isinstance(path, str) else str(path)).split("/")
    name = parts[-1].lower()
    if template_name(name):
        return False
    # A process's environment or memory: ketch's own holds the API keys
    # (/proc/self/... resolves to /proc/<pid>/...).
    if len(parts) >= 4 and parts[0] == "" and parts[1] == "proc" and name in PROCESS_SECRETS:
        return True
    if not SECRET_DIRS.isdisjoint(part.lower() for part in parts[:-1]):
        return True
    return secret_name(parts[-1])
