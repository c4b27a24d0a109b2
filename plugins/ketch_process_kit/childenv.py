"""The environment every child process starts with: ketch's own, minus its secrets.

The rule for the processes ketch starts on its own or the person's behalf (user hooks,
MCP servers, permission-prompt commands, the person's ``!command``; the commands the
model proposes get an allow-list instead, see the shell plugin): variables whose names
look like credentials
(``*KEY*``, ``*SECRET*``, ``*TOKEN*``, ``*PASSWORD*``, ``*PASSPHRASE*``, ...) are
removed, so an API key or the store's passphrase in the user's environment never
reaches a program the model proposed or a repository configured. Callers add what a
child needs on top (``extra``, which passes whatever its names) and may keep named
variables the user explicitly passed through (``keep``, glob patterns).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ketch_policy_kit.globs import names_matcher
from ketch_process_kit.variables import SECRET_MARKERS, secret_name

__all__ = ["SECRET_MARKERS", "child_environment", "secret_name"]


def child_environment(
    environ: Mapping[str, str],
    *,
    keep: Iterable[str] = (),
    drop: Iterable[str] = (),
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """``environ`` without secret-looking variables (and without ``drop``), except those
    matching a ``keep`` pattern; then ``extra`` on top."""
    patterns = [p for p in keep if isinstance(p, str) and p]
    kept = names_matcher(patterns) if patterns else None
    dropped = frozenset(drop)
    env: dict[str, str] = {}
    for name, value in environ.items():
        if (kept is not None and kept(name)) or not (secret_name(name) or name in dropped):
            env[name] = value
    if extra:
        env.update(extra)
    return env
