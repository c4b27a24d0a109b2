"""ketch's approval question as ACP ``session/request_permission`` options, and the
editor's choice back as the same :class:`ApprovalAnswer` the shell gives the policy.

* allow once — this call only;
* allow always — ketch's *scoped* always: the rule the policy offered (for example
  ``shell(git status:*)``), saved for this workspace, named in the option's label;
  offered only when the policy has such a scope;
* reject once — this call only;
* reject always — this call's scope (or, without one, this exact call) is rejected
  without asking for the rest of this session. Rejections are never saved: they only
  ever take authority away, and a new session asks again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp.schema import PermissionOption

# Who answers: the ACP client (an editor), usually its person; it may answer by itself.
ORIGIN = "acp-client"

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ApprovalAnswer, ApprovalRequest

ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS = (
    "allow_once",
    "allow_always",
    "reject_once",
    "reject_always",
)


def rejection_key(request: ApprovalRequest) -> str:
    return request.scope or f"{request.call.tool}\x00{request.summary}"


def options_for(request: ApprovalRequest) -> list[PermissionOption]:
    options = [PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once")]
    if request.scope:
        options.append(
            PermissionOption(
                option_id=ALLOW_ALWAYS,
                name=f"Always allow {request.scope} in this workspace",
                kind="allow_always",
            )
        )
    options.append(PermissionOption(option_id=REJECT_ONCE, name="Reject", kind="reject_once"))
    what = request.scope or "this exact call"
    options.append(
        PermissionOption(
            option_id=REJECT_ALWAYS,
            name=f"Reject {what} for the rest of this session",
            kind="reject_always",
        )
    )
    return options


def answer_for(outcome: Any, request: ApprovalRequest) -> tuple[ApprovalAnswer, bool]:
    """(the answer for the policy, whether to reject this key from now on)."""
    from ketch.api import ApprovalAnswer

    if getattr(outcome, "outcome", None) != "selected":
        return ApprovalAnswer(
            approved=False, message="The user dismissed the approval request."
        ), False
    option = getattr(outcome, "option_id", None)
    if option == ALLOW_ONCE:
        return ApprovalAnswer(approved=True, remember="once", origin=ORIGIN), False
    if option == ALLOW_ALWAYS and request.scope:
        return ApprovalAnswer(approved=True, remember="always", origin=ORIGIN), False
    if option == REJECT_ALWAYS:
        return ApprovalAnswer(approved=False, origin=ORIGIN), True
    # reject_once, or an option this request never offered: no.
    return ApprovalAnswer(approved=False, origin=ORIGIN), False
