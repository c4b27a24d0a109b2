"""The request budget: what one provider request carries and whether it fits.

One module for everyone who measures a request: the budget plugin before every call
to the provider (:func:`fit_request`), ``/context`` and ``/compact`` outside a turn,
and a frontend's meter before the first usage report. The system prompt and tool schemas are the fixed part (they
cannot be compacted); the active context is the rest. Tool specs are built once per
tool object and reused (a tool's schema does not change), so measuring a request
costs the messages' estimates, which are themselves cached per message.
"""

from __future__ import annotations

import contextlib
import json
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ketch.api import History, PromptPart, StashKey, ToolSpec, join_parts, offered_tools
from ketch.api import tool_spec as plain_spec
from ketch_context_kit.budget import (
    context_budget,
    estimator_for,
    model_info,
    text_units,
    utilization,
)
from ketch_provider_kit.images import without_images

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session, Tool

# Per tool object: its spec and the weighted characters of its schema (json).
_SPECS: weakref.WeakKeyDictionary[Any, tuple[ToolSpec, float]] = weakref.WeakKeyDictionary()


def tool_spec(tool: Tool) -> tuple[ToolSpec, float]:
    """The spec the model sees for ``tool`` and its size in characters (cached)."""
    try:
        return _SPECS[tool]
    except (KeyError, TypeError):
        pass
    spec = plain_spec(tool)
    size = text_units(json.dumps(spec.model_dump(), default=str))
    with contextlib.suppress(TypeError):  # not weak-referenceable: fine, just not cached
        _SPECS[tool] = (spec, size)
    return spec, size


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


def largest_parts(session: Session, budget: RequestBudget, count: int = 3) -> str:
    """The system prompt's largest parts with their sizes ("AGENTS.md ~1,200, ...")."""
    estimator = estimator_for(session)
    sizes = sorted(
        (
            (estimator.text(p.render()), p.title or p.source or "untitled")
            for p in budget.parts
            if p.text.strip()
        ),
        reverse=True,
    )
    return ", ".join(f"{title} ~{tokens:,}" for tokens, title in sizes[:count])


def remedies_for(budget: RequestBudget) -> list[str]:
    """What the person can do about a request that does not fit, whatever shapes it."""
    remedies = []
    if budget.system_tokens > budget.capacity // 4:
        remedies.append("shorten the instruction files or the project memory")
    if budget.schema_tokens > budget.capacity // 4:
        remedies.append("disable tools or plugins you do not need (--no-plugin NAME)")
    return [
        *remedies,
        "start a new session",
        "use a model with a larger context window (context_window in config.toml)",
    ]


def overflow_report(session: Session, budget: RequestBudget) -> str:
    """Why the request does not fit the model, and what the person can do (the plugins
    that shape the context say more, by raising ``ContextOverflow`` themselves)."""
    largest = largest_parts(session, budget)
    capacity = budget.capacity
    remedies = remedies_for(budget)
    return (
        "the context does not fit the model: "
        f"system prompt ~{budget.system_tokens:,} tokens"
        + (f" (largest: {largest})" if largest else "")
        + f", tool schemas ~{budget.schema_tokens:,} ({len(budget.specs)} tools), messages "
        f"~{budget.message_tokens:,}; total ~{budget.projected:,} of an effective capacity of "
        f"{capacity:,}. Remedies: " + "; ".join(remedies) + "."
    )


# The session was told once that its model takes no images.
_TOLD_NO_IMAGES = StashKey[bool]()


def fit_images(session: Session, messages: History) -> History:
    """``messages`` for the session's model: without images (a note in their place, and
    a notice once per session) when the catalog knows the model takes none."""
    info = model_info(session)
    if info is None or info.images is not False:
        return messages
    stripped, dropped = without_images(messages)
    if dropped and not session.stash.get(_TOLD_NO_IMAGES, False):
        from ketch.api import NoticeEvent

        session.stash[_TOLD_NO_IMAGES] = True
        session.kernel.emit(
            session,
            NoticeEvent(
                level="warning",
                message=f"model '{session.model}' does not take images ({info.source or 'model catalog'}); it gets the text alone. Use a model with vision to show it pictures.",
            ),
        )
    return stripped
