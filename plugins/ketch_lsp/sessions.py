"""Live sessions by id (a tool's context names its session only by id)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch.api import StashKey

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, Session

LIVE = StashKey[dict[str, Any]]()


def started(session: Session) -> None:
    session.kernel.stash.setdefault(LIVE, {})[session.id] = session


def ended(session: Session) -> None:
    session.kernel.stash.setdefault(LIVE, {}).pop(session.id, None)


def session_of(kernel: Kernel, session_id: str) -> Session | None:
    return kernel.stash.get(LIVE, {}).get(session_id)
