"""The hook the commands plugin declares: slash command names other plugins take.

Implement it with ``@hookimpl(optionalhook=True)`` (so your plugin still loads when
the commands plugin is disabled)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch.api import hookspec, returns

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel


@hookspec
@returns(list, tuple, set, frozenset)
def commands_taken_names(kernel: Kernel) -> list[str] | None:
    """Names of slash commands this plugin offers that beat a Markdown command file of
    the same name (a skill does), lower-case.

    Called when the command files are read (once per registry build). Return the
    names, or None. An implementation that raises is reported and skipped.
    """
