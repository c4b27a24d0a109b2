"""Permission decisions: votes, their combination, and approval requests.

Every policy plugin votes on each proposed call (``ketch_policy_vote``). The kernel
combines the votes: deny beats ask beats allow, and no vote at all means ask. A vote
from a plugin that raised counts as deny (fail closed). An ask goes to the frontend's
approver; no approver (print mode without a TTY) means denied.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ketch.tools import Access, Effect

Decision = Literal["allow", "ask", "deny"]


_RANK = {"allow": 0, "ask": 1, "deny": 2}
# Joins the scopes of several voters (or several rules) into one approval scope.
SCOPE_SEPARATOR = "; "


class Vote(BaseModel):
    model_config = ConfigDict(frozen=True)

    decision: Decision
    reason: str = ""
    plugin: str = ""
    # For ask: the scope an "always allow" answer would grant (e.g. "shell(git status:*)").
    scope: str | None = None
    # A hard ask is the person's to answer: no hook's "allow" turns it into a run. The
    # kernel marks every ask from an essential plugin (the guards) hard.
    hard: bool = False
    # What settled it, in the voter's words, for provenance (``PermissionEvent.origin``):
    # e.g. a rule, a proof, the profile, an approval; and the rules (or approval scopes)
    # that decided, by their text.
    origin: str = ""
    rules: tuple[str, ...] = ()


class PermissionSnapshot(BaseModel):
    """The authority in force for one step, frozen when the step starts."""

    model_config = ConfigDict(frozen=True)

    mode: str  # a registered Mode's name ("" when no plugin declares modes)
    profile: str  # a registered Profile's name (the policy plugins' vocabulary)
    workspace: Path
    rules: dict[str, tuple[str, ...]] = Field(default_factory=dict)  # allow/ask/deny
    approvals: tuple[str, ...] = ()  # scopes the user allowed in this session
    # What plugins said about this step (``ketch_permission_facts``), keyed by the name
    # their contract declares; read by the plugins that share that contract.
    facts: dict[str, Any] = Field(default_factory=dict)


class ProposedCall(BaseModel):
    """A tool call as the policy sees it: validated input plus what it would touch."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    id: str
    tool: str
    input: dict[str, Any]
    effects: frozenset[Effect]
    mutating: bool
    accesses: tuple[Access, ...] = ()
    plugin: str = ""  # the plugin that registered the tool
    capabilities: frozenset[str] = frozenset()  # what the tool declares it is (Tool.capabilities)


def combine_votes(votes: Iterable[Vote | None]) -> Vote:
    """deny > ask > allow; no vote at all means ask."""
    best: Vote | None = None
    votes_seen: list[Vote] = []
    reasons: dict[str, list[str]] = {"allow": [], "ask": [], "deny": []}
    scopes: list[str | None] = []
    for vote in votes:
        if vote is None:
            continue
        votes_seen.append(vote)
        if vote.decision == "ask":
            scopes.append(vote.scope)
        if vote.reason:
            reasons[vote.decision].append(vote.reason)
        if best is None or _RANK[vote.decision] > _RANK[best.decision]:
            best = vote
    if best is None:
        return Vote(decision="ask", reason="no policy plugin voted on this call", origin="default")
    if best.decision != "allow":
        # Say every reason for the winning decision, not just the first plugin's.
        joined = "; ".join(dict.fromkeys(reasons[best.decision]))
        update: dict[str, object] = {"reason": joined or best.reason}
        update["rules"] = tuple(
            dict.fromkeys(r for v in votes_seen if v.decision == best.decision for r in v.rules)
        )
        if best.decision == "ask":
            update["hard"] = any(v.hard for v in votes_seen if v.decision == "ask")
            # "Always allow" must satisfy every voter that asked: all their scopes, or
            # none at all when one of them offers no scope (it would ask again anyway).
            update["scope"] = (
                SCOPE_SEPARATOR.join(dict.fromkeys(s for s in scopes if s))
                if scopes and None not in scopes
                else None
            )
        return best.model_copy(update=update)
    return best


class ApprovalRequest(BaseModel):
    """What the frontend shows when a call needs the user's approval."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    call: ProposedCall
    reason: str
    summary: str  # the full command line / path / URL, always shown
    scope: str | None = None  # what "always allow" would be scoped to
    # What the call would do, from ``Tool.preview`` (a diff for an edit), shown before
    # the person decides; None when the tool has nothing more to show than the summary.
    preview: str | None = None
    # Which subagent asks ("reviewer: check the diff"), None for the root session: a
    # subagent's asks go to its parent's approver, and the person sees who is asking.
    agent: str | None = None
    # A hard ask (the guards'): the person's to answer. An approver that is a program,
    # not a person (the Agent SDK's can_use_tool), must not approve it.
    hard: bool = False


class ApprovalAnswer(BaseModel):
    model_config = ConfigDict(frozen=True)

    approved: bool
    # once: this call only; session: the scope, until the session ends;
    # always: the scope, persisted for this workspace (by the policy plugin).
    remember: Literal["once", "session", "always"] = "once"
    message: str | None = None  # optional note for the model when denied
    # Who answered, for provenance (``PermissionEvent.origin``): "person" when a person
    # chose, else what did (a program, an SDK callback). "" is recorded as "approver".
    origin: str = ""


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalAnswer]]
