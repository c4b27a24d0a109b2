"""Turn events: the one observation boundary.

Frontends, storage, user hooks and tests observe a turn only through these. The
``stream-json`` output writes each as one JSON line (``event.model_dump_json()``).
The set is open: a plugin defines its own events as subclasses of :class:`Event`
with a ``type`` of its own and registers them (``ketch_register_events``); the kernel,
the store and the frontends carry any event, and one whose plugin is gone is still
read back as a plain :class:`Event` with its fields (:func:`parse_event`). The
kernel's own are the design's required types plus ``message``, ``tool_started``, ``tool_output``,
``notice``, ``mode``, ``user_prompt`` and ``active`` (``waiting`` is the stream watch's).

Every event of a session that runs as another's agent carries its ``agent_id`` (the
kernel stamps it); the root session's events have none, and it is left out of their JSON.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from ketch.messages import Message

Decision = Literal["allow", "ask", "deny"]
TurnStopReason = Literal["end_turn", "max_iterations", "cancelled", "error", "context_overflow"]


class Event(BaseModel):
    """Base of every event: its ``type``, when, and which agent's session emitted it.
    Unknown fields are kept (an event read back from a newer or absent plugin)."""

    model_config = ConfigDict(frozen=True, extra="allow", defer_build=True)

    ts: float = Field(default_factory=time.time)
    # The agent whose session emitted this event (None: the root session).
    agent_id: str | None = None
    type: str

    @model_serializer(mode="wrap")
    def _without_root_agent(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("agent_id", "") is None:
            del data["agent_id"]  # absent for the root, as the design's event table says
        return data


class SessionEvent(Event):
    type: Literal["session"] = "session"
    session_id: str
    model: str
    mode: str
    profile: str
    provider: str = ""
    resumed: bool = False


class UserPromptEvent(Event):
    type: Literal["user_prompt"] = "user_prompt"
    text: str
    steer: bool = False


class TextDeltaEvent(Event):
    type: Literal["text_delta"] = "text_delta"
    text: str


class ReasoningDeltaEvent(Event):
    type: Literal["reasoning_delta"] = "reasoning_delta"
    text: str


class ToolCallEvent(Event):
    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    input: dict[str, Any]
    summary: str = ""


class PermissionEvent(Event):
    type: Literal["permission"] = "permission"
    tool_call_id: str
    decision: Decision
    reason: str = ""
    approved: bool | None = None  # for ask: what the approver (or its absence) said
    scope: str | None = None  # what an "always allow" answer was scoped to
    remembered: str | None = (
        None  # the scope an answer allowed beyond this call (session or always)
    )
    # Who decided, for provenance: the deciding vote's ``origin`` (its voter's word: a
    # rule, a proof, the profile, an approval...), "hook" for a ``ketch_before_tool_use``
    # verdict, the approver's ``ApprovalAnswer.origin`` for an answered ask ("approver"
    # when it did not say), "no-approver" for an ask nobody could answer.
    origin: str = ""
    plugin: str = ""  # the plugin whose vote or hook verdict decided ("" for an approver)
    rules: list[str] = Field(default_factory=list)  # the rules/approval scopes that decided
    effects: list[str] = Field(default_factory=list)  # the call's effects, as policy saw them


class ToolStartedEvent(Event):
    """Emitted right before a tool's effect runs: storage journals it as dispatched."""

    type: Literal["tool_started"] = "tool_started"
    tool_call_id: str
    name: str
    input: dict[str, Any]


class ToolOutputEvent(Event):
    """Output of a call that is still running (a command's lines as it prints them), for
    frontends to show live: ``text`` is whole lines, new since the last such event of the
    call, already through the result filters (``ketch_tool_result``). Not stored: the
    ``tool_result`` that follows carries the output the model gets."""

    type: Literal["tool_output"] = "tool_output"
    tool_call_id: str
    name: str = ""
    text: str


class ToolResultEvent(Event):
    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    name: str = ""
    ok: bool
    output: str
    diff: str | None = None
    # ran = the effect ran; refused = policy/mode/validation stopped it first
    outcome: Literal["succeeded", "failed", "blocked", "cancelled", "refused"] = "succeeded"


class UsageEvent(Event):
    type: Literal["usage"] = "usage"
    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0  # of input_tokens, read from the prompt cache
    cache_write_tokens: int = 0  # of input_tokens, written to the prompt cache
    reasoning_tokens: int = 0  # of output_tokens
    # The meter (``ketch_response_usage``): 0 when no plugin measures the context.
    context_utilization: float = 0.0
    context_tokens: int = 0
    effective_capacity: int = 0
    model: str = ""  # the model that answered (a session can switch models)
    provider: str = ""
    # Plugins add fields of their own (``ketch_event_fields``): a catalog adds ``cost_usd``.


class ErrorEvent(Event):
    type: Literal["error"] = "error"
    kind: str
    retryable: bool
    message: str
    retry_in: float | None = None  # seconds until the loop retries, when it will


class RetryEvent(Event):
    """The provider call is being tried again (``attempt`` counts from 1). With
    ``discard`` the text and reasoning deltas streamed since the last request began
    belong to a failed attempt: drop them; the new attempt streams its own."""

    type: Literal["retry"] = "retry"
    attempt: int
    discard: bool = False
    reason: str = ""


class MessageEvent(Event):
    """A message appended to the saved transcript (user, assistant or tool results)."""

    type: Literal["message"] = "message"
    message: Message


class NoticeEvent(Event):
    type: Literal["notice"] = "notice"
    level: Literal["info", "warning"] = "info"
    message: str


class ModeEvent(Event):
    type: Literal["mode"] = "mode"
    mode: str
    profile: str


class TurnEndEvent(Event):
    type: Literal["turn_end"] = "turn_end"
    text: str
    stop_reason: TurnStopReason
    input_tokens: int = 0
    output_tokens: int = 0
    iterations: int = 0


class ActiveEvent(Event):
    """The active context was replaced, not appended to (by a plugin that shapes it:
    a compaction, a rewind). ``active`` is the ids of the new active context, in order;
    ``reason`` says who replaced it. The transcript is unchanged."""

    type: Literal["active"] = "active"
    active: list[str]
    reason: str = ""


CORE_EVENTS: tuple[type[Event], ...] = (
    SessionEvent,
    UserPromptEvent,
    TextDeltaEvent,
    ReasoningDeltaEvent,
    ToolCallEvent,
    PermissionEvent,
    ToolStartedEvent,
    ToolOutputEvent,
    ToolResultEvent,
    UsageEvent,
    ErrorEvent,
    RetryEvent,
    MessageEvent,
    NoticeEvent,
    ModeEvent,
    ActiveEvent,
    TurnEndEvent,
)


def event_type(model: type[Event]) -> str:
    """The ``type`` an event model declares (its ``Literal`` default)."""
    return str(model.model_fields["type"].default)


def parse_event(data: dict[str, Any], models: dict[str, type[Event]]) -> Event:
    """An event from its JSON form: the registered model of its type, else a plain
    :class:`Event` keeping every field (a plugin that defined it is not loaded)."""
    model = models.get(str(data.get("type")), Event)
    return model.model_validate(data)
