"""Headless frontend: ``ketch -p PROMPT`` (or a prompt piped on stdin) runs one turn.

``--output-format text`` prints the answer on stdout and progress on stderr; ``json``
prints one object at the end; ``stream-json`` prints every event as one JSON line and
a ``result`` line per turn. ``--input-format stream-json`` reads Claude Code's
user-message lines from stdin, a turn each, in one session.
``--permission-prompt-command CMD`` lets a program answer approvals.
Exit codes: 0 the turn ended normally, 1 it failed (error, overflow, iteration limit,
cancel), 2 usage. See docs/headless.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ketch import hookimpl
from ketch.frontends import Frontend
from ketch.plugins import provides


@hookimpl
@provides("headless")
def ketch_register_frontends(register: Callable[[Frontend], None]) -> None:
    from ketch_headless.run import run_headless

    register(
        Frontend(name="headless", run=run_headless, help="one turn, no interaction", role="prompt")
    )


@hookimpl
def ketch_add_cli_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input-format",
        choices=["text", "stream-json"],
        default="text",
        help="headless input: text (default), or stream-json (user-message JSON lines on stdin, a turn each)",
    )
    parser.add_argument(
        "--permission-prompt-command",
        metavar="CMD",
        help="headless: run CMD for every approval; the request as JSON on stdin, the decision as JSON on stdout",
    )
    parser.add_argument(
        "--permission-prompt-timeout",
        type=float,
        metavar="SECONDS",
        help="how long --permission-prompt-command may take before the call is denied (default 60)",
    )
