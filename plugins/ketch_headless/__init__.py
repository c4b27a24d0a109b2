"""Headless frontend: ``ketch -p PROMPT`` (or a prompt piped on stdin) runs one turn.

``--output-format text`` prints the answer on stdout and progress on stderr; ``json``
prints one object at the end; ``stream-json`` prints every event as one JSON line.
Exit codes: 0 the turn ended normally, 1 it failed (error, overflow, iteration limit,
cancel), 2 usage.
"""

from __future__ import annotations

from collections.abc import Callable

from ketch import hookimpl
from ketch.frontends import Frontend


@hookimpl
def ketch_register_frontends(register: Callable[[Frontend], None]) -> None:
    from ketch_headless.run import run_headless

    register(Frontend(name="headless", run=run_headless, help="one turn, no interaction", role="prompt"))
