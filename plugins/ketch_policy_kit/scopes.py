"""The narrow scopes an "always allow" answer grants, in the rule syntax.

A scope is as narrow as is useful and never a blanket grant: a file's directory tree,
a program and its subcommand, a host. Where nothing narrow is worth granting (a
dynamic command, a hard guard), there is no scope and the person approves once.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from ketch.api import SCOPE_SEPARATOR
from ketch_policy_kit.paths import is_within, resolve


def clean(text: str) -> str | None:
    """A path as a literal glob (glob characters bracketed), or None when it cannot be one."""
    if SCOPE_SEPARATOR in text or "\n" in text or "\x00" in text:
        return None
    for char in "*?[":
        text = text.replace(char, f"[{char}]")
    return text


def scope(kind: str, pattern: str | None) -> str | None:
    return f"{kind}({pattern})" if pattern else None


def read_scope(path: Path, workspace: Path) -> str | None:
    """Reading exactly this file (a secret the guards asked about)."""
    root = resolve(workspace)
    text = str(path.relative_to(root)) if is_within(path, root) else str(path)
    cleaned = clean(text)
    return f"read({cleaned})" if cleaned else None


def write_glob(path: str, workspace: Path) -> str | None:
    """A file at the top of the workspace: that file; deeper: its directory's tree."""
    rel = Path(path).relative_to(resolve(workspace))
    if len(rel.parts) <= 1:
        return clean(str(rel))
    parent = clean(str(rel.parent))
    return f"{parent}/**" if parent else None


def dir_glob(path: str) -> str | None:
    """A directory's tree (a file's: its directory's); never the whole filesystem."""
    directory = path if os.path.isdir(path) else os.path.dirname(path)
    cleaned = clean(directory)
    return f"{cleaned}/**" if cleaned and cleaned != "/" else None


_SAFE_TOKEN = re.compile(r"^[A-Za-z0-9_./:=@%+,\-]+$")
SUBCOMMAND_PROGRAMS = frozenset(
    {
        "git", "npm", "pnpm", "yarn", "cargo", "go", "docker", "podman", "kubectl", "pip", "pip3", "uv", "poetry", "pdm",
        "hatch", "gh", "brew", "apt", "apt-get", "conda", "rustup", "dotnet", "bundle", "gem", "composer", "deno", "bun",
        "terraform", "helm", "systemctl", "pre-commit", "ruff", "tox", "nox", "make", "just", "mvn", "gradle",
    }
)  # fmt: skip
RUNNERS = frozenset({"run", "exec", "x", "dlx", "tool"})  # npm run NAME, uv run TOOL: keep the name
INTERPRETERS = frozenset(
    {"python", "python3", "python2", "node", "perl", "ruby", "php", "lua", "Rscript", "deno", "bun", "sh", "bash", "zsh",
     "dash", "ksh", "fish", "pwsh"}
)  # fmt: skip
EXACT_ONLY = frozenset(
    {"rm", "rmdir", "dd", "mkfs", "chmod", "chown", "chgrp", "curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat",
     "netcat", "telnet", "ftp", "kill", "killall", "pkill", "shutdown", "reboot", "crontab", "at", "shred", "truncate"}
)  # fmt: skip


def shell_scope(argv: Sequence[str | None], *, extra_args: bool = False) -> str | None:
    """The rule an "always allow" for one simple command grants, or None when there is
    none worth granting (a dynamic or odd command is approved once at a time)."""
    if not argv or any(v is None for v in argv):
        return None
    tokens = [v for v in argv if v is not None]
    if "/" in tokens[0] or not all(_SAFE_TOKEN.match(t) for t in tokens):
        return None
    name = tokens[0]
    exact = "" if extra_args else "shell(" + " ".join(shlex.quote(t) for t in tokens) + ")"
    if name in EXACT_ONLY or len(tokens) == 1 and name in INTERPRETERS:
        return exact or None
    if name in INTERPRETERS:
        if len(tokens) >= 3 and tokens[1] == "-m":
            return f"shell({name} -m {tokens[2]}:*)"
        return exact or None
    if name in SUBCOMMAND_PROGRAMS and len(tokens) >= 2:
        if tokens[1].startswith("-"):
            return exact or None
        if tokens[1] in RUNNERS and len(tokens) >= 3 and not tokens[2].startswith("-"):
            return f"shell({name} {tokens[1]} {tokens[2]}:*)"
        return f"shell({name} {tokens[1]}:*)"
    return f"shell({name}:*)"


def join(scopes: Sequence[str | None]) -> str | None:
    """Several scopes as one, or None when one of them has none (it would ask again)."""
    if not scopes or any(s is None for s in scopes):
        return None
    return SCOPE_SEPARATOR.join(dict.fromkeys(s for s in scopes if s)) or None
