"""What compaction is, to the kernel: a request with a budget, and a result with a record."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ketch.messages import History


class CompactionRequest(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    session: Any  # ketch.session.Session
    messages: History  # the active context now
    system_tokens: int = 0  # system prompt + tool schemas, which compaction cannot shrink
    target_tokens: int  # bring messages + system_tokens to at most this
    capacity_tokens: int  # effective capacity
    reason: Literal["auto", "overflow", "command"] = "auto"  # command: /compact
    instructions: str | None = None  # from /compact [instructions]
    pinned: frozenset[str] = frozenset()  # message ids that must stay verbatim


class CompactionResult(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    messages: History  # the new active context
    before_tokens: int
    after_tokens: int
    compactor: str = ""
    summary: str = ""
    # What was replaced by what: e.g. [{"replaced": [msg ids], "by": msg id, "how": "summary"}]
    record: list[dict[str, Any]] = Field(default_factory=list)
