"""What one headless turn cost and refused, for the ``json`` object and the
``stream-json`` ``turn_end`` line, which also carries the turn's totals in Claude
Code's ``result`` shape (``usage`` with ``cache_read_input_tokens``, ``num_turns``,
``duration_ms``, ``is_error``, ``subtype``, ``total_cost_usd``, ``permission_denials``)
beside ketch's own fields, whose names do not change.

``cost_usd`` appears only when a provider knows the model's price: the turn's
``turn_end`` carries it, or else its ``usage`` events do (summed).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import TurnEndEvent

# ketch's stop reasons as Claude Code's result subtypes.
SUBTYPES = {"end_turn": "success", "max_iterations": "error_max_turns"}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass
class TurnMeter:
    """Listens to a session's events; ``start()`` before each turn."""

    started: float = field(default_factory=time.monotonic)
    session_id: str = ""
    cached_tokens: int = 0
    session_cost: float | None = None
    denials: list[dict[str, Any]] = field(default_factory=list)
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)

    def start(self) -> None:
        self.started = time.monotonic()
        self.cached_tokens = 0
        self.denials = []

    def __call__(self, event: Any) -> None:
        kind = event.type
        if kind == "session":
            self.session_id = event.session_id
        elif kind == "usage":
            self.cached_tokens += int(getattr(event, "cached_tokens", 0) or 0)
        elif kind == "tool_call":
            self.calls[event.id] = {
                "tool_name": event.name,
                "tool_use_id": event.id,
                "tool_input": event.input,
            }
        elif kind == "permission" and (event.decision == "deny" or event.approved is False):
            call = self.calls.get(event.tool_call_id)
            if call is not None and call not in self.denials:
                self.denials.append(call)

    def turn_cost(self, end: TurnEndEvent) -> float | None:
        # The turn's own total: None when any of its responses had no known price (a
        # partial sum would pass for the whole cost).
        return _number(getattr(end, "cost_usd", None))

    def finish(self, end: TurnEndEvent) -> float | None:
        """The turn's cost (None: unknown); adds it to the session's."""
        cost = self.turn_cost(end)
        if cost is not None:
            self.session_cost = (self.session_cost or 0.0) + cost
        return cost

    def totals(self, end: TurnEndEvent, cost: float | None) -> dict[str, Any]:
        """The turn's totals in Claude Code's ``result`` field names."""
        payload: dict[str, Any] = {
            "subtype": SUBTYPES.get(end.stop_reason, "error_during_execution"),
            "is_error": end.stop_reason != "end_turn",
            "session_id": self.session_id,
            "num_turns": end.iterations,
            "duration_ms": int((time.monotonic() - self.started) * 1000),
            "usage": {
                "input_tokens": end.input_tokens,
                "output_tokens": end.output_tokens,
                "cache_read_input_tokens": self.cached_tokens,
            },
            "permission_denials": list(self.denials),
        }
        if cost is not None:
            payload["cost_usd"] = round(cost, 6)
        if self.session_cost is not None:
            # Claude Code's total is cumulative over a streaming-input session.
            payload["total_cost_usd"] = round(self.session_cost, 6)
        return payload
