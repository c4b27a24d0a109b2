"""Approvals: "allow for this session" scopes live in the session's approvals only
(``ketch_policy_kit.approvals``: in memory); "always allow" scopes are also persisted
per workspace through the store, and loaded into a session's approvals when it starts
(new or resumed).

Nothing here is kept in ``session.state``: that is saved with the session and
restored on resume, and authority must never come back that way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from ketch.api import StashKey
from ketch_policy_kit.approvals import approve_for_session, session_approvals
from ketch_policy_kit.rules import RuleError, parse_rule, split_scope

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, PermissionSnapshot, Session
    from ketch_store_kit.protocols import ApprovalStore


class StoreUnavailable(Exception):
    pass


def open_store(kernel: Kernel) -> ApprovalStore:
    """The session store (one that keeps approvals), or StoreUnavailable with a one-line reason."""
    try:
        store = kernel.store
    except Exception as exc:  # noqa: BLE001 - a locked or broken store: say so, keep going
        raise StoreUnavailable(
            f"the session store cannot be opened ({getattr(exc, 'message', exc)})"
        ) from None
    if store is None:
        raise StoreUnavailable("no session store is loaded (is the 'store' plugin disabled?)")
    return cast("ApprovalStore", store)  # a store without them fails where it is used


def valid_scope(scope: str) -> bool:
    try:
        for piece in split_scope(scope):
            parse_rule(piece)
    except RuleError:
        return False
    return bool(split_scope(scope))


def persisted(kernel: Kernel, workspace: str) -> list[str]:
    store = open_store(kernel)
    try:
        return [s for s in store.list_approvals(workspace) if isinstance(s, str)]
    except Exception as exc:  # noqa: BLE001
        raise StoreUnavailable(
            f"the store could not list approvals ({type(exc).__name__}: {exc})"
        ) from None


def load_into(session: Session) -> str | None:
    """Add this workspace's persisted approvals to the session; a notice on failure."""
    if session.kernel.hooks.first("store_problem", kernel=session.kernel) is not None:
        return None  # the store has said why it is closed, once (its session-start notice)
    try:
        scopes = persisted(session.kernel, str(session.workspace))
    except StoreUnavailable as exc:
        return f"saved 'always allow' approvals were not loaded: {exc}"
    for scope in scopes:
        if valid_scope(scope):
            approve_for_session(session, scope)
    return None


# The store opens concurrently with the first request (a headless run): the saved
# approvals are loaded at the first vote instead of at session start, and added to the
# snapshots taken before that, which they were in force for.
DUE = StashKey[bool]()
SAVED = StashKey["tuple[str, ...]"]()


def load_later(session: Session) -> None:
    session.stash[DUE] = True


def with_saved(session: Session, snapshot: PermissionSnapshot) -> PermissionSnapshot:
    """``snapshot`` with this workspace's saved approvals, loaded now if they were due."""
    if session.stash.pop(DUE, False):
        before = set(session_approvals(session))
        problem = load_into(session)
        if problem:
            from ketch.api import NoticeEvent

            session.kernel.emit(session, NoticeEvent(level="warning", message=problem))
        session.stash[SAVED] = tuple(s for s in session_approvals(session) if s not in before)
    missing = tuple(s for s in session.stash.get(SAVED) or () if s not in snapshot.approvals)
    if not missing:
        return snapshot
    return snapshot.model_copy(update={"approvals": (*snapshot.approvals, *missing)})


def remember_always(session: Session, scope: str) -> str | None:
    """An "always allow" answer: in force for the rest of the session, and saved for
    this workspace. Returns a notice when it could not be saved."""
    if not valid_scope(scope):
        return f"approval scope {scope!r} is not a valid rule; it was not remembered"
    approve_for_session(session, scope)
    try:
        open_store(session.kernel).add_approval(str(session.workspace), scope)
    except StoreUnavailable as exc:
        return f"'always allow {scope}' holds for this session only: {exc}"
    except Exception as exc:  # noqa: BLE001
        return f"'always allow {scope}' holds for this session only: the store failed ({type(exc).__name__}: {exc})"
    return None


def revoke(
    kernel: Kernel, workspace: str, selector: str, session: Session | None = None
) -> tuple[list[str], str]:
    """Revoke by number (as listed: persisted first, then session-only) or by exact scope.
    Returns (revoked scopes, message)."""
    try:
        saved = persisted(kernel, workspace)
        store_error = None
    except StoreUnavailable as exc:
        saved, store_error = [], str(exc)
    session_only = [s for s in (session_approvals(session) if session else []) if s not in saved]
    listed = saved + session_only
    target: str | None = None
    if selector.isdigit() and 1 <= int(selector) <= len(listed):
        target = listed[int(selector) - 1]
    elif selector in listed:
        target = selector
    if target is None:
        hint = f" ({store_error})" if store_error else ""
        return (
            [],
            f"no approval {selector!r}; list them with /permissions (or `ketch permissions list`){hint}",
        )
    if target in saved:
        open_store(kernel).remove_approval(workspace, target)
    if session is not None and target in session_approvals(session):
        session_approvals(session).remove(target)
    return [target], f"revoked: {target}"


def describe(
    kernel: Kernel, workspace: str, session: Session | None, rules: dict[str, Any]
) -> list[str]:
    """Lines for /permissions and `ketch permissions list`."""
    from ketch_policy_kit.rules import compile_rules

    lines: list[str] = []
    if session is not None:
        from ketch_tool_kit.sandbox import SANDBOXED

        sandboxed = session.snapshot().facts.get(SANDBOXED) is True
        lines.append(
            f"mode {session.mode}, profile {session.profile}, sandbox {'on' if sandboxed else 'off'}"
        )
    compiled = compile_rules(
        tuple(rules.get("allow", ())), tuple(rules.get("ask", ())), tuple(rules.get("deny", ()))
    )
    for decision in ("deny", "ask", "allow"):
        entries = list(rules.get(decision, ()))
        lines.append(f"{decision} rules (config): " + (", ".join(entries) if entries else "none"))
    for error in compiled.errors:
        lines.append(f"  error: {error}")
    try:
        saved = persisted(kernel, workspace)
        store_note = ""
    except StoreUnavailable as exc:
        saved, store_note = [], f" ({exc})"
    session_only = [s for s in (session_approvals(session) if session else []) if s not in saved]
    lines.append(
        f"always-allow approvals for {workspace}:{store_note}" + ("" if saved else " none")
    )
    lines += [f"  {n}. {scope}" for n, scope in enumerate(saved, 1)]
    if session is not None:
        lines.append("this session only:" + ("" if session_only else " none"))
        lines += [f"  {n}. {scope}" for n, scope in enumerate(session_only, len(saved) + 1)]
    lines.append("revoke one with /permissions revoke N (or the scope itself)")
    return lines
