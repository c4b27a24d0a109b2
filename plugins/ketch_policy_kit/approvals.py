"""The scopes the person allowed for the rest of a session ("allow for this session", and
"always allow" ones once loaded or answered).

Kept in memory only (``session.stash``): a resumed session starts without them, because
authority is never restored. A session that runs as another's agent shares its root
session's list. The policy plugin fills it (from the approver's answers, the
``permission`` events, and the workspace's saved approvals) and contributes it to every
step's permission snapshot; tools that need to know what was approved (the shell's
exposed secrets) read it here.
"""

from __future__ import annotations

from typing import Any

from ketch.api import StashKey

APPROVALS = StashKey[list[str]]()


def session_approvals(session: Any) -> list[str]:
    """The live list of a session's approved scopes (its root session's)."""
    while getattr(session, "parent", None) is not None:
        session = session.parent
    found = session.stash.get(APPROVALS)
    if found is None:
        found = session.stash[APPROVALS] = []
    return found


def approve_for_session(session: Any, scope: str) -> None:
    approvals = session_approvals(session)
    if scope not in approvals:
        approvals.append(scope)
