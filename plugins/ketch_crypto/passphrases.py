"""Where a passphrase comes from: ``KETCH_PASSPHRASE`` (scripts, CI) or the terminal.

The variable is taken out of this process's environment the first time it is read, so
nothing ketch starts later can inherit it even by a path that forgot the child
environment rule (which drops every ``*PASSPHRASE*`` name anyway). The terminal is
asked only when a person can answer: stdin or stderr is a TTY and ``/dev/tty`` opens.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import MutableMapping

ENV = "KETCH_PASSPHRASE"
NEW_ENV = "KETCH_NEW_PASSPHRASE"  # `ketch store key passphrase` without a terminal
MIN_LENGTH = 8

_taken: dict[str, str | None] = {}


def take(name: str = ENV, *also: MutableMapping[str, str]) -> str | None:
    """The variable's value (read once, then removed from ``os.environ`` and ``also``)."""
    if name not in _taken:
        _taken[name] = os.environ.get(name) or None
    os.environ.pop(name, None)
    for environ in also:
        value = environ.pop(name, None)
        if value and _taken.get(name) is None:
            _taken[name] = value
    return _taken[name]


def forget() -> None:
    """Drop what was taken (tests run many kernels in one process)."""
    _taken.clear()


def can_prompt() -> bool:
    if not (_isatty(sys.stdin) or _isatty(sys.stderr)):
        return False
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return False
    os.close(fd)
    return True


def _isatty(stream: object) -> bool:
    with contextlib.suppress(Exception):
        return bool(stream.isatty())  # type: ignore[attr-defined]
    return False


def ask(prompt: str) -> str | None:
    """One hidden line from the terminal; None when the person gave up (Ctrl-C, Ctrl-D)."""
    import getpass

    try:
        return getpass.getpass(prompt)
    except (EOFError, KeyboardInterrupt):
        print(file=sys.stderr)
        return None


def tell(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def too_short(passphrase: str) -> str | None:
    if len(passphrase) < MIN_LENGTH:
        return f"a passphrase needs at least {MIN_LENGTH} characters"
    return None


def ask_new(purpose: str) -> str | None:
    """A new passphrase typed twice; None (nothing chosen) on an empty line or giving up."""
    tell(purpose)
    for _ in range(3):
        first = ask("New passphrase (empty: none): ")
        if not first:
            return None
        problem = too_short(first)
        if problem:
            tell(f"ketch: {problem}; try again")
            continue
        if ask("Type it again: ") == first:
            return first
        tell("ketch: the two did not match; try again")
    return None
