"""A policy for the shell tests: ``mark`` asks with the scope ``mark`` until that scope
is approved for the session (then it is allowed), so the approval list offers
"this session" and "always" and the test can see a session approval take effect."""

from __future__ import annotations

from typing import Any

from ketch import hookimpl
from ketch.policy import Vote


@hookimpl
def ketch_policy_vote(call: Any, snapshot: Any, session: Any) -> Vote | None:
    if call.tool != "mark":
        return None
    if "mark" in snapshot.approvals:
        return Vote(decision="allow", reason="mark was approved for this session")
    return Vote(decision="ask", reason="marking files asks first", scope="mark")
