"""The hook ketch-notes declares: any plugin may add notes by implementing it."""

from __future__ import annotations

from typing import Any

from ketch.api import hookspec, returns


@hookspec
@returns(list)
def notes_sources(kernel: Any) -> list[str] | None:
    """Short notes about the workspace that the model should know.

    Called by the notes plugin before every model request (for the system prompt) and
    by ``ketch notes``, with the kernel (``kernel.workspace``, ``kernel.settings``).
    Return a list of one-line notes, or None for nothing. All implementations are
    called. An implementation that raises, or answers with anything but a list, is
    reported once and skipped: the other plugins' notes are still given.

    Implement it with ``@hookimpl(optionalhook=True)``, so that your plugin still
    loads (and is simply not called) where ketch-notes is not installed.
    """
