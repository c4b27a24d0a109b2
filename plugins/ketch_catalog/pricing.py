"""What a response cost, from the catalog's prices.

Cost (USD) of one response: input tokens that were neither read from nor written to the
prompt cache at the input price, cache reads at the cached price (else the input price),
cache writes at the cache-write price (else the input price), output tokens (reasoning
included: it is billed as output) at the output price; a price tier applies to the whole
request once its prompt is over the tier's size. A model without a known input and
output price has no cost: None, never a guess.

The catalog adds ``cost_usd`` to each ``usage`` event (this response) and each
``turn_end`` (the turn's responses, None once one had no price) through the kernel's
``ketch_event_fields``. The session's running total lives in ``session.state``
(:data:`STATE_KEY`, saved with the session): the priced total, and how many responses
had no price; the turn's tally in ``session.stash``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ketch.api import ModelInfo, StashKey

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session, Usage

STATE_KEY = "catalog.pricing"


@dataclass(frozen=True)
class PriceTier:
    """Prices that apply to a whole request once its prompt is over ``above_tokens``."""

    above_tokens: int
    input_price: float | None = None
    output_price: float | None = None
    cached_input_price: float | None = None


@dataclass(frozen=True)
class PricedModel(ModelInfo):
    """A model's facts with its prices, in USD per million tokens."""

    input_price: float | None = None
    output_price: float | None = None
    cached_input_price: float | None = None  # reading from the prompt cache
    cache_write_price: float | None = None  # writing to it (Anthropic)
    tiers: tuple[PriceTier, ...] = field(default=())

    @property
    def priced(self) -> bool:
        return self.input_price is not None and self.output_price is not None


def cost_of(usage: Usage, info: ModelInfo | None) -> float | None:
    """USD for one response's ``usage`` at ``info``'s prices, or None when not priced."""
    if not isinstance(info, PricedModel) or not info.priced:
        return None
    inp, out, cached = info.input_price, info.output_price, info.cached_input_price
    for tier in info.tiers:
        if usage.input_tokens > tier.above_tokens:
            inp = tier.input_price if tier.input_price is not None else inp
            out = tier.output_price if tier.output_price is not None else out
            cached = tier.cached_input_price if tier.cached_input_price is not None else cached
    assert inp is not None and out is not None
    read = min(usage.cached_tokens, usage.input_tokens)
    written = min(usage.cache_write_tokens, usage.input_tokens - read)
    plain = usage.input_tokens - read - written
    write_price = info.cache_write_price if info.cache_write_price is not None else inp
    total = (
        plain * inp
        + read * (cached if cached is not None else inp)
        + written * write_price
        + usage.output_tokens * out
    )
    return round(total / 1_000_000, 8)


def pricing_state(session: Session) -> dict[str, Any]:
    state = session.state.get(STATE_KEY)
    if not isinstance(state, dict):
        state = session.state[STATE_KEY] = {"cost_usd": 0.0, "priced": 0, "unpriced": 0}
    return state


@dataclass
class CostTally:
    """One turn's cost: the sum of its responses, None once one of them had no price."""

    total: float | None = None
    unknown: bool = False

    def add(self, cost: float | None) -> None:
        if cost is None:
            self.unknown, self.total = True, None
        elif not self.unknown:
            self.total = round((self.total or 0.0) + cost, 8)


TURN = StashKey[CostTally]()


def charge(session: Session, usage: Usage, info: ModelInfo | None) -> float | None:
    """The cost of one response, added to the session's total and the turn's tally
    (None: unknown price)."""
    cost = cost_of(usage, info)
    state = pricing_state(session)
    if cost is None:
        state["unpriced"] = int(state.get("unpriced", 0)) + 1
    else:
        state["cost_usd"] = round(float(state.get("cost_usd", 0.0)) + cost, 8)
        state["priced"] = int(state.get("priced", 0)) + 1
    session.stash.setdefault(TURN, CostTally()).add(cost)
    return cost


def event_fields(session: Session, event: Any) -> dict[str, Any] | None:
    """``cost_usd`` for a ``usage`` event (charged once per response) or a ``turn_end``."""
    from ketch.api import Usage
    from ketch_context_kit.budget import model_info

    if event.type == "usage":
        usage = Usage(
            input_tokens=event.input_tokens,
            output_tokens=event.output_tokens,
            cached_tokens=event.cached_tokens,
            reasoning_tokens=event.reasoning_tokens,
            cache_write_tokens=event.cache_write_tokens,
        )
        return {"cost_usd": charge(session, usage, model_info(session))}
    if event.type == "turn_end":
        return {"cost_usd": session.stash.get(TURN, CostTally()).total}
    return None


def new_turn(session: Session) -> None:
    session.stash[TURN] = CostTally()
