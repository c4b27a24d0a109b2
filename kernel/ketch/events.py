"""Turn events: the one observation boundary.

Frontends, storage, user hooks and tests observe a turn only through these. The
``stream-json`` output writes each as one JSON line (``event.model_dump_json()``).
The design's required types and fields are all here with those meanings; the rest
(``message``, ``tool_started``, ``tool_output``, ``notice``, ``mode``, ``user_prompt``,
``subagent``, ``changes``, ``rewind``) are additions for storage and frontends.

Every event of a subagent's session carries that subagent's ``agent_id`` (the kernel
stamps it); the root session's events have none, and it is left out of their JSON.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from ketch.messages import Message

Decision = Literal["allow", "ask", "deny"]
TurnStopReason = Literal["end_turn", "max_iterations", "cancelled", "error", "context_overflow"]


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    ts: float = Field(default_factory=time.time)
    # The subagent whose session emitted this event (None: the root session).
    agent_id: str | None = None

    @model_serializer(mode="wrap")
    def _without_root_agent(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("agent_id", "") is None:
            del data["agent_id"]  # absent for the root, as the design's event table says
        return data


class SessionEvent(_Event):
    type: Literal["session"] = "session"
    session_id: str
    model: str
    mode: str
    profile: str
    provider: str = ""
    resumed: bool = False


class UserPromptEvent(_Event):
    type: Literal["user_prompt"] = "user_prompt"
    text: str
    steer: bool = False


class TextDeltaEvent(_Event):
    type: Literal["text_delta"] = "text_delta"
    text: str


class ReasoningDeltaEvent(_Event):
    type: Literal["reasoning_delta"] = "reasoning_delta"
    text: str


class ToolCallEvent(_Event):
    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    input: dict[str, Any]
    summary: str = ""


class PermissionEvent(_Event):
    type: Literal["permission"] = "permission"
    tool_call_id: str
    decision: Decision
    reason: str = ""
    approved: bool | None = None  # for ask: what the approver (or its absence) said
    scope: str | None = None  # what an "always allow" answer was scoped to
    # Who decided, for provenance: the deciding vote's ``origin`` (its voter's word: a
    # rule, a proof, the profile, an approval...), "hook" for a ``ketch_before_tool_use``
    # verdict, the approver's ``ApprovalAnswer.origin`` for an answered ask ("approver"
    # when it did not say), "no-approver" for an ask nobody could answer.
    origin: str = ""
    plugin: str = ""  # the plugin whose vote or hook verdict decided ("" for an approver)
    rules: list[str] = Field(default_factory=list)  # the rules/approval scopes that decided
    effects: list[str] = Field(default_factory=list)  # the call's effects, as policy saw them


class ToolStartedEvent(_Event):
    """Emitted right before a tool's effect runs: storage journals it as dispatched."""

    type: Literal["tool_started"] = "tool_started"
    tool_call_id: str
    name: str
    input: dict[str, Any]


class ToolOutputEvent(_Event):
    """Output of a call that is still running (a command's lines as it prints them), for
    frontends to show live: ``text`` is whole lines, new since the last such event of the
    call, already through the result filters (``ketch_tool_result``). Not stored: the
    ``tool_result`` that follows carries the output the model gets."""

    type: Literal["tool_output"] = "tool_output"
    tool_call_id: str
    name: str = ""
    text: str


class ToolResultEvent(_Event):
    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    name: str = ""
    ok: bool
    output: str
    diff: str | None = None
    # ran = the effect ran; refused = policy/mode/validation stopped it first
    outcome: Literal["succeeded", "failed", "blocked", "cancelled", "refused"] = "succeeded"


class UsageEvent(_Event):
    type: Literal["usage"] = "usage"
    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0
    context_utilization: float
    context_tokens: int = 0
    effective_capacity: int = 0
    cost_usd: float | None = None  # this response, when the model's price is known
    model: str = ""  # the model that answered (a session can switch models)
    provider: str = ""


class CompactionEvent(_Event):
    type: Literal["compaction"] = "compaction"
    before_tokens: int
    after_tokens: int
    compactor: str = ""
    summary: str = ""


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    kind: str
    retryable: bool
    message: str
    retry_in: float | None = None  # seconds until the loop retries, when it will


class RetryEvent(_Event):
    """The provider call is being tried again (``attempt`` counts from 1). With
    ``discard`` the text and reasoning deltas streamed since the last request began
    belong to a failed attempt: drop them; the new attempt streams its own."""

    type: Literal["retry"] = "retry"
    attempt: int
    discard: bool = False
    reason: str = ""


class WaitingEvent(_Event):
    """Nothing has arrived from the provider for ``elapsed`` seconds (sent every few
    seconds while it lasts), so a frontend can show that ketch is waiting, not stuck."""

    type: Literal["waiting"] = "waiting"
    elapsed: float
    timeout: float | None = None  # when ketch gives up waiting (progress_timeout), if known


class MessageEvent(_Event):
    """A message appended to the saved transcript (user, assistant or tool results)."""

    type: Literal["message"] = "message"
    message: Message


class NoticeEvent(_Event):
    type: Literal["notice"] = "notice"
    level: Literal["info", "warning"] = "info"
    message: str


class ModeEvent(_Event):
    type: Literal["mode"] = "mode"
    mode: str
    profile: str


class SubagentEvent(_Event):
    """A subagent started or finished, on its parent's stream. ``subagent_id`` is what
    every event of the subagent's own session carries as ``agent_id``; ``tool_call_id``
    is the parent's call that started it. When ``finished``: how its turn ended, its
    final answer and the files it changed."""

    type: Literal["subagent"] = "subagent"
    status: Literal["started", "finished"]
    subagent_id: str
    name: str
    description: str = ""
    tool_call_id: str = ""
    background: bool = False
    session_id: str = ""  # the subagent's own session
    stop_reason: str | None = None
    result: str = ""
    files_changed: list[str] = Field(default_factory=list)


class ChangesEvent(_Event):
    """What the running turn has changed in the workspace so far, as a plugin that
    watches the workspace (checkpoints) measured it: sent after each call that changed
    files, cumulative for the turn (the last one of a turn is its total). ``paths`` are
    relative to the workspace; ``revert`` names the command that takes them back
    (``/undo``), empty when nothing can."""

    type: Literal["changes"] = "changes"
    paths: list[str]
    revert: str = ""


class RewindEvent(_Event):
    """The conversation was rewound (:meth:`ketch.session.Session.rewind`): the transcript
    message ``message_id`` and every later one are marked rewound (they stay in the
    transcript), ``rewound`` lists them all, and ``active`` is the ids of the active
    context the conversation continues from."""

    type: Literal["rewind"] = "rewind"
    message_id: str
    rewound: list[str]
    active: list[str]


class TurnEndEvent(_Event):
    type: Literal["turn_end"] = "turn_end"
    text: str
    stop_reason: TurnStopReason
    input_tokens: int = 0
    output_tokens: int = 0
    iterations: int = 0
    cost_usd: float | None = None  # the turn's responses, when every one had a known price


Event = Annotated[
    SessionEvent
    | UserPromptEvent
    | TextDeltaEvent
    | ReasoningDeltaEvent
    | ToolCallEvent
    | PermissionEvent
    | ToolStartedEvent
    | ToolOutputEvent
    | ToolResultEvent
    | UsageEvent
    | CompactionEvent
    | ErrorEvent
    | RetryEvent
    | WaitingEvent
    | MessageEvent
    | NoticeEvent
    | ModeEvent
    | SubagentEvent
    | ChangesEvent
    | RewindEvent
    | TurnEndEvent,
    Field(discriminator="type"),
]
