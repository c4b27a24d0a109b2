"""The hook the headless plugin declares. Implement it with
``@hookimpl(optionalhook=True)`` (so your plugin still loads without this one)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch.api import hookspec

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Approver, Kernel, Session


@hookspec(firstresult=True)
def headless_approver(kernel: Kernel, session: Session) -> Approver | None:
    """Who answers an approval in a headless run that has no one else to ask.

    Called once per headless session, only when neither ``--permission-prompt-command``
    nor a terminal can answer (without an answer, every ask is denied). Return an
    approver (``async (ApprovalRequest) -> ApprovalAnswer``) that a *person* answers —
    the background plugin's, which waits for someone to attach — or None. Never answer
    by yourself: an approver that allows without a person widens authority. An
    implementation that raises is reported and skipped (asks are then denied). Stops at
    the first non-None result.
    """
