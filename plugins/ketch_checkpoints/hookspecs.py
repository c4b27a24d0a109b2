"""The hook the checkpoints plugin declares: which files a call changed.

Implement it with ``@hookimpl(optionalhook=True)`` (so your plugin still loads when
the checkpoints plugin is disabled)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ketch.api import hookspec

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ProposedCall, Session


@hookspec
def checkpoints_files_changed(
    session: Session, call: ProposedCall, paths: list[Path], created: list[Path]
) -> None:
    """The files (and symbolic links) one call changed, created or removed.

    Called once per call that can change the workspace (a mutating tool: a file
    tool, a shell command, a rename), right after the checkpoint taken after it and
    before the other ``ketch_after_tool_use`` implementations of later plugins run,
    only when it changed something. ``paths`` are absolute, inside the session's
    workspace, as the checkpoint saw them (``.gitignore``-aware: ignored files are not
    seen); ``created`` those of them that did not exist before the call. What a command
    changes in the background later is not reported here. The
    return value is ignored; an implementation that raises is reported and skipped.
    """
