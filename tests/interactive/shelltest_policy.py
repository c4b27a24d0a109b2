"""A policy for the shell tests: ``mark`` asks with the scope ``mark`` until that scope
is approved for the session (then it is allowed), so the approval list offers
"this session" and "always" and the test can see a session approval take effect.

The kernel keeps no approvals: a voter that offers a scope keeps what the person
allowed beyond one call itself, from the ``permission`` event the kernel emits for the
answer (``remembered``: the scope allowed for the session or always), as the bundled
policy plugin does (``ketch_policy_kit.approvals``)."""

from __future__ import annotations

from typing import Any

from ketch.api import StashKey, Vote, hookimpl

APPROVED = StashKey[set[str]]()


def _approved(session: Any) -> set[str]:
    found = session.stash.get(APPROVED)
    if found is None:
        found = session.stash[APPROVED] = set()
    return found


@hookimpl
def ketch_event(session: Any, event: Any) -> None:
    if getattr(event, "type", None) == "permission" and event.approved and event.remembered:
        _approved(session).add(event.remembered)


@hookimpl
def ketch_policy_vote(call: Any, snapshot: Any, session: Any) -> Vote | None:
    if call.tool != "mark":
        return None
    if "mark" in _approved(session) or "mark" in snapshot.approvals:
        return Vote(decision="allow", reason="mark was approved for this session")
    return Vote(decision="ask", reason="marking files asks first", scope="mark")
