"""The hard guards: the floor of the permission engine (essential, cannot be disabled).

Whatever other policy plugins vote, and in every profile including full-access,
these still ask (votes combine deny > ask > allow, so nothing can override them):

* writes outside the workspace;
* writes to git internals (any ``.git`` directory, and ``git config`` that writes);
* writes to ketch's own config, hooks and MCP settings (the user config dir, where
  ``config.toml`` and ``trust.json`` (the pins) live, and any ``.ketch/`` directory);
* writes to the other protected paths, which run code later outside any sandbox
  (:mod:`ketch_policy_kit.protected`): ``.claude``, ``.vscode``, ``.idea``, ``.husky``,
  ``.envrc``, ``.gitconfig*``, ``.mcp.json`` at any depth, a repository's
  ``core.hooksPath`` directory and config includes, and every workspace file a
  configured hook or MCP server executes;
* reads of files that look like secrets (``.env*``, key files, ``~/.ssh``...), unless
  an allow rule or an approval names them;
* for shell commands, the same checks on every effect the shell analysis finds:
  redirect targets, the paths programs write (by the grammar table: rm, cp -t DIR,
  sort -o, find -fprint...), secret-looking files they read (named, globbed, or inside
  a directory read recursively, unless the sandbox masks them); commands run with
  sudo/doas/su; a link made earlier in the same line; git in a repository other than
  the workspace's own; and anything the analysis cannot see through (a line it does
  not understand, a wrapper whose command it cannot read, an option only known at run
  time where one could write), since it could hide any of the above.

A thin voter: the shell analysis is :mod:`ketch_shell_kit`, the path facts and the
rule syntax :mod:`ketch_policy_kit` (libraries that register nothing). Importing this
module imports neither; the vote does, on first use.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import PermissionSnapshot, ProposedCall, Session, Vote


@hookimpl
def ketch_policy_vote(
    call: ProposedCall, snapshot: PermissionSnapshot, session: Session
) -> Vote | None:
    from ketch_guards.guards import vote
    from ketch_policy_kit.paths import resolve
    from ketch_policy_kit.protected import protected_for_write

    settings, environ = session.kernel.settings, session.kernel.environ

    def protected(path: Path) -> list[Any]:
        if not path.is_relative_to(resolve(snapshot.workspace)):
            return []  # asks anyway: outside the workspace
        return protected_for_write(path, snapshot.workspace, settings, environ)

    return vote(call, snapshot, protected)
