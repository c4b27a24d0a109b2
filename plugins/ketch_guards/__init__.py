"""The hard guards: the floor of the permission engine (essential, cannot be disabled).

Whatever other policy plugins vote, and in every profile including full-access,
these still ask (votes combine deny > ask > allow, so nothing can override them):

* writes outside the workspace;
* writes to git internals (any ``.git`` directory, and ``git config`` that writes);
* writes to ketch's own config, hooks and MCP settings (the user config dir, where
  ``config.toml`` and ``trusted.toml`` live, and any ``.ketch/`` directory);
* reads of files that look like secrets (``.env*``, key files, ``~/.ssh``...), unless
  an allow rule or an approval names them;
* for shell commands, the same checks on redirect targets, on the operands of
  programs that write files (rm, mv, cp, tee, sed -i, ...) and on arguments naming
  secret files; commands run with sudo/doas/su; and any command the analysis cannot
  fully follow, since it could hide any of the above.

This package also holds the shared ground the policy plugin builds on: the shell
analyser (``shell``), the rule syntax (``rules``) and the operand table (``operands``).
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
