"""The hard guards: the floor of the permission engine (essential, cannot be disabled).

Whatever other policy plugins vote, these still ask (deny > ask > allow):

* writes outside the workspace, and reads outside it;
* writes to ``.git`` internals (config, hooks, objects, refs...);
* writes to ketch's own config, hooks and MCP settings (user config dir and the
  workspace's ``.ketch/``);
* reads of files that look like secrets (``.env*``, key files), unless a rule allows.

Paths are compared by component after resolving symlinks, so ``/w/proj-evil`` is not
inside ``/w/proj``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.policy import PermissionSnapshot, ProposedCall, Vote
    from ketch.session import Session


@hookimpl
def ketch_policy_vote(call: ProposedCall, snapshot: PermissionSnapshot, session: Session) -> Vote | None:
    from ketch_guards.guards import vote

    return vote(call, snapshot)
