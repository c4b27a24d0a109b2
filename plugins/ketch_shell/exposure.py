"""Which secrets a command may see inside the sandbox: what the person allowed reading.

The sandbox masks every workspace secret unless the person allowed reading it. A
secret is exposed to one command when

* an allow rule (``[permissions] allow = ["read(.env)"]``) or an approval remembered
  for this session (``read(.env)``, from an "allow for the session" answer) covers
  reading it -- the same rules the guards honour for ``read_file``; or
* the person approved *this* call after being asked, and the command names the
  secret (its workspace path, ``./`` path or absolute path, as a whole word): they saw
  the command line, with the guards' "reads a file that looks like a secret" reason.

Nothing else exposes a secret: not an allow-everything profile, not a broad ``shell``
rule, not a call that was allowed without anyone being asked. The live session's
approvals are kept in its in-memory stash (never copied into ``session.state``, which is
saved: authority must not survive a resume).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.api import StashKey

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session, ToolContext

# In session.stash (a tool's ``ctx.stash``), from the session's start to its end: the
# session itself (its approvals are its root session's), and the tool call ids the
# person approved when asked.
SESSION = StashKey["Session"]()
APPROVED = StashKey[set[str]]()


def started(session: Session) -> None:
    session.stash[SESSION] = session
    session.stash[APPROVED] = set()


def ended(session: Session) -> None:
    session.stash.pop(SESSION)
    session.stash.pop(APPROVED)


def observe(session: Session, event: Any) -> None:
    """Remember calls the person approved (the permission event comes before the call runs)."""
    if getattr(event, "type", None) == "permission" and event.decision == "ask" and event.approved:
        session.stash.setdefault(APPROVED, set()).add(event.tool_call_id)


def _names(command: str, path: Path, workspace: Path) -> bool:
    forms = {str(path)}
    if path.is_relative_to(workspace):
        rel = str(path.relative_to(workspace))
        forms |= {rel, f"./{rel}"}
    return any(re.search(rf"(?<![\w./-]){re.escape(form)}(?![\w./-])", command) for form in forms)


def exposure(ctx: ToolContext, command: str) -> Callable[[Path], bool]:
    """The ``exposed`` predicate for one command (see the module docstring)."""
    from ketch.api import Effect
    from ketch_policy_kit.approvals import session_approvals
    from ketch_policy_kit.rules import compile_scopes

    workspace = Path(ctx.workspace).resolve()
    session = ctx.stash.get(SESSION)
    permissions = getattr(ctx.settings, "permissions", None)
    allow = tuple(getattr(permissions, "allow", ()) or ())
    approvals = tuple(session_approvals(session)) if session is not None else ()
    rules = compile_scopes(tuple(str(r) for r in allow) + approvals)
    person = ctx.tool_call_id in ctx.stash.get(APPROVED, set())

    def exposed(path: Path) -> bool:
        if any(rule.matches_path("shell", Effect.READ, str(path), workspace) for rule in rules):
            return True
        return person and _names(command, path, workspace)

    return exposed
