"""The hook the hooks plugin declares (``ketch_add_hookspecs``): hook commands from
elsewhere than the config files."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch.api import hookspec

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session


@hookspec
def hooks_extra(session: Session, event: str) -> list[dict[str, Any]] | None:
    """More hooks of ``event``: an installed Claude Code plugin's ``hooks/hooks.json``.

    Called each time ``event`` fires, right before its hooks run (answer quickly).
    Return the hooks that may run *now*, each a table as ``[[hooks.EVENT]]`` takes
    (``matcher``, ``command``, ``args``, ``timeout``, ``async``, ``claude_names``,
    ``plugin_root``, ``plugin_data``): the implementer checks its own pins at this
    call, so a hook whose script changed since it was pinned is left out. They run
    after the configured hooks of the event, with the same input, answers and limits.
    None or [] when there are none. All results are collected.
    """
