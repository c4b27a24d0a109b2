"""ketch_cli_hints: a mistyped option on the command line is named, with a "did you mean".

The kernel's parser says a usage error in one line; it asks ``ketch_usage_error`` for a
better one, and this plugin answers for an unknown ``--option``: the known options one
edit away (``hints.py``). Without it the line is argparse's own message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch.api import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    import argparse


@hookimpl
def ketch_usage_error(parser: argparse.ArgumentParser, args: list[str], message: str) -> str | None:
    from ketch_cli_hints.hints import unknown_option

    return unknown_option(parser, args)
