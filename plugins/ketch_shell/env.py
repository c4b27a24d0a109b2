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

from collections.abc import Iterable, Mapping

from ketch.api import child_environment, secret_name

CHANGES_PROGRAMS = frozenset(
    {
        "BASH_ENV",
        "ENV",
        "LD_PRELOAD",
        "LD_AUDIT",
        "RIPGREP_CONFIG_PATH",
        "PROMPT_COMMAND",
        "GIT_EXTERNAL_DIFF",
        "CDPATH",  # steers every later `cd` (the analysis assumes it is unset)
    }
)
# No pager waits for a key, no git prompt for a password nobody can type, no colours.
FIXED = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "TERM": "dumb",
    "NO_COLOR": "1",
    # git status/diff refresh .git/index as they read; with this they only read, so the
    # policy can prove them read-only (the shell tool says so in its access).
    "GIT_OPTIONAL_LOCKS": "0",
}


looks_secret = secret_name


def child_env(
    environ: Mapping[str, str], *, passthrough: Iterable[str] = (), cwd: str | None = None
) -> dict[str, str]:
    # Exported bash functions (BASH_FUNC_name%%) would redefine commands the policy judged.
    drop = [
        name
        for name in environ
        if name in CHANGES_PROGRAMS or name.startswith(("DYLD_", "BASH_FUNC_"))
    ]
    extra = dict(FIXED) | ({"PWD": cwd} if cwd is not None else {})
    return child_environment(environ, keep=passthrough, drop=drop, extra=extra)


def removed(environ: Mapping[str, str], env: Mapping[str, str]) -> list[str]:
    return sorted(name for name in environ if name not in env)
