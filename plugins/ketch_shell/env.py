"""The environment a command runs with: ketch's own, minus what must not leak.

Variables whose names look like secrets (``*KEY*``, ``*SECRET*``, ``*TOKEN*``,
``*PASSWORD*``, and a few spellings more) are removed, so an API key in the user's
shell never reaches a command the model wrote. So are variables that silently change
what a "read-only" program does (``BASH_ENV``, ``LD_PRELOAD``, ``RIPGREP_CONFIG_PATH``):
the policy judges commands by their text, and these would make the text lie.

``[shell] env_passthrough = ["AWS_*", "GITHUB_TOKEN"]`` in the *user* config keeps the
named ones (glob patterns). It is read from the ``[shell]`` table, which a repository's
``.ketch/config.toml`` cannot set before the workspace is trusted.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping

SECRET_MARKERS = ("KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL")
CHANGES_PROGRAMS = frozenset(
    {"BASH_ENV", "ENV", "LD_PRELOAD", "LD_AUDIT", "RIPGREP_CONFIG_PATH", "PROMPT_COMMAND", "GIT_EXTERNAL_DIFF"}
)
# No pager waits for a key, no git prompt for a password nobody can type, no colours.
FIXED = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "TERM": "dumb", "NO_COLOR": "1"}


def looks_secret(name: str) -> bool:
    upper = name.upper()
    return any(marker in upper for marker in SECRET_MARKERS)


def child_env(environ: Mapping[str, str], *, passthrough: Iterable[str] = (), cwd: str | None = None) -> dict[str, str]:
    patterns = [p for p in passthrough if isinstance(p, str) and p]
    env: dict[str, str] = {}
    for name, value in environ.items():
        kept = any(fnmatch.fnmatchcase(name, p) for p in patterns)
        if not kept and (looks_secret(name) or name in CHANGES_PROGRAMS or name.startswith("DYLD_")):
            continue
        env[name] = value
    env.update(FIXED)
    if cwd is not None:
        env["PWD"] = cwd
    return env


def removed(environ: Mapping[str, str], env: Mapping[str, str]) -> list[str]:
    return sorted(name for name in environ if name not in env)
