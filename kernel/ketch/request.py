"""The request budget: what one provider request carries and whether it fits.

One module for everyone who measures a request: the loop before every call to the
provider, ``/context`` and ``/compact`` outside a turn, and a frontend's meter before
the first usage report. The system prompt and tool schemas are the fixed part (they
cannot be compacted); the active context is the rest. Tool specs are built once per
tool object and reused (a tool's schema does not change), so measuring a request
costs the messages' estimates, which are themselves cached per message.
"""

from __future__ import annotations

import contextlib
import json
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ketch.context import context_budget, estimator_for, split_turns, text_units, utilization
from ketch.prompt import PromptPart, join_parts
from ketch.providers import ToolSpec

if TYPE_CHECKING:  # pragma: no cover
    from ketch.session import Session
    from ketch.tools import Tool

# Per tool object: its spec and the weighted characters of its schema (json).
_SPECS: weakref.WeakKeyDictionary[Any, tuple[ToolSpec, float]] = weakref.WeakKeyDictionary()


def tool_spec(tool: Tool) -> tuple[ToolSpec, float]:
    """The spec the model sees for ``tool`` and its size in characters (cached)."""
    try:
        return _SPECS[tool]
    except (KeyError, TypeError):
        pass
    spec = ToolSpec(name=tool.name, description=tool.description, input_schema=tool.input_schema())
    size = text_units(json.dumps(spec.model_dump(), default=str))
    with contextlib.suppress(TypeError):  # not weak-referenceable: fine, just not cached
        _SPECS[tool] = (spec, size)
    return spec, size


def offered_tools(session: Session, allowed: Iterable[str] | None = None) -> list[Tool]:
    """The tools offered in the session's mode (a read-only mode offers no mutating
    tool), narrowed to ``allowed`` names when the turn is restricted."""
    tools = list(session.kernel.tools.values())
    if session.read_only:
        tools = [t for t in tools if not t.mutating]
    if allowed is not None:
        names = set(allowed)
        tools = [t for t in tools if t.name in names]
    return tools


@dataclass
class RequestBudget:
    """The numbers behind one request (estimates unless a provider reported)."""

    system: str
    parts: list[PromptPart]
    specs: tuple[ToolSpec, ...]
    system_tokens: int
    schema_tokens: int
    schema_units: float
    message_tokens: int
    capacity: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def fixed(self) -> int:
        """What every request carries whatever compaction does: system prompt + schemas."""
        return self.system_tokens + self.schema_tokens

    @property
    def projected(self) -> int:
        return self.fixed + self.message_tokens

    @property
    def utilization(self) -> float:
        return utilization(self.projected, self.capacity)

    @property
    def fits(self) -> bool:
        return self.projected <= self.capacity


def measure(
    session: Session, tools: list[Tool] | None = None, *, parts: list[PromptPart] | None = None
) -> RequestBudget:
    """Measure the request the session would send now."""
    estimator = estimator_for(session)
    tools = offered_tools(session) if tools is None else tools
    if parts is None:
        parts = session.kernel.hooks.system_prompt_parts(session)
    system = join_parts(parts)
    pairs = [tool_spec(t) for t in tools]
    specs = tuple(spec for spec, _ in pairs)
    schema_tokens = sum(estimator.units(size) for _, size in pairs)
    return RequestBudget(
        system=system,
        parts=parts,
        specs=specs,
        system_tokens=estimator.text(system),
        schema_tokens=schema_tokens,
        schema_units=sum(size for _, size in pairs),
        message_tokens=estimator.messages(session.active),
        capacity=context_budget(session).capacity,
    )


def overflow_report(session: Session, budget: RequestBudget, keep_recent_turns: int) -> str:
    """Why the context does not fit even after compaction, and what the person can do."""
    estimator = estimator_for(session)
    active = session.active
    spans = split_turns(active)
    pinned_ids = set(session.pins)
    recent = spans[-keep_recent_turns:] if spans else []
    recent_ids = {i for span in recent for i in span.ids}
    pinned = [
        m
        for span in spans
        if pinned_ids.intersection(span.ids) and not recent_ids.intersection(span.ids)
        for m in active[span.start : span.end]
    ]
    recent_tokens = sum(estimator.messages(active[s.start : s.end]) for s in recent)
    pinned_tokens = estimator.messages(pinned)
    capacity = budget.capacity
    total = budget.projected
    other = total - budget.fixed - recent_tokens - pinned_tokens
    sizes = sorted(
        (
            (estimator.text(p.render()), p.title or p.source or "untitled")
            for p in budget.parts
            if p.text.strip()
        ),
        reverse=True,
    )
    largest = ", ".join(f"{title} ~{tokens:,}" for tokens, title in sizes[:3])
    breakdown = (
        f"system prompt ~{budget.system_tokens:,} tokens"
        + (f" (largest: {largest})" if largest else "")
        + f", tool schemas ~{budget.schema_tokens:,} ({len(budget.specs)} tools), pinned ~{pinned_tokens:,}, "
        f"recent ~{recent_tokens:,}, other ~{max(other, 0):,}; total ~{total:,} of an effective capacity of {capacity:,}"
    )
    remedies = []
    if pinned_tokens:
        remedies.append("unpin turns (/unpin)")
    if recent_tokens > capacity // 2:
        remedies.append("send a shorter message, or ask for less output at once")
    if budget.system_tokens > capacity // 4:
        remedies.append("shorten the instruction files or the project memory")
    if budget.schema_tokens > capacity // 4:
        remedies.append("disable tools or plugins you do not need (--no-plugin NAME)")
    remedies += [
        "start a new session",
        "use a model with a larger context window (context_window in config.toml)",
    ]
    return (
        "the context does not fit the model even after compaction: "
        + breakdown
        + ". Remedies: "
        + "; ".join(remedies)
        + "."
    )
