"""What a response cost, and what a model takes, from ``ketch_model_info``.

Cost (USD) of one response: input tokens that were neither read from nor written to the
prompt cache at the input price, cache reads at the cached price (else the input price),
cache writes at the cache-write price (else the input price), output tokens (reasoning
included: it is billed as output) at the output price; a price tier applies to the whole
request once its prompt is over the tier's size. A model without a known input and
output price has no cost: None, never a guess.

The session's running total lives in ``session.state["kernel.pricing"]`` (JSON, saved
with the session): the priced total, and how many responses had no price.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ketch.messages import History, Usage, without_images

if TYPE_CHECKING:  # pragma: no cover
    from ketch.providers import ModelInfo
    from ketch.session import Session

STATE_KEY = "kernel.pricing"


def model_info(session: Session) -> ModelInfo | None:
    """What the model catalog (any ``ketch_model_info`` plugin) knows of the session's model."""
    kind = str(getattr(session.provider, "kind", "") or "")
    return session.kernel.hooks.first("ketch_model_info", provider_kind=kind, model=session.model)  # type: ignore[no-any-return]


def cost_of(usage: Usage, info: ModelInfo | None) -> float | None:
    """USD for one response's ``usage`` at ``info``'s prices, or None when not priced."""
    if info is None or not info.priced:
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


def charge(session: Session, usage: Usage) -> float | None:
    """The cost of one response, added to the session's total (None: unknown price)."""
    cost = cost_of(usage, model_info(session))
    state = pricing_state(session)
    if cost is None:
        state["unpriced"] = int(state.get("unpriced", 0)) + 1
    else:
        state["cost_usd"] = round(float(state.get("cost_usd", 0.0)) + cost, 8)
        state["priced"] = int(state.get("priced", 0)) + 1
    return cost


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


def fit_images(session: Session, messages: History) -> History:
    """``messages`` for the session's model: without images (a note in their place, and
    a notice once per session) when the catalog knows the model takes none."""
    info = model_info(session)
    if info is None or info.images is not False:
        return messages
    stripped, dropped = without_images(messages)
    state = pricing_state(session)
    if dropped and not state.get("image_notice"):
        from ketch.events import NoticeEvent

        state["image_notice"] = True
        session.kernel.emit(
            session,
            NoticeEvent(
                level="warning",
                message=f"model '{session.model}' does not take images ({info.source or 'model catalog'}); it gets the text alone. Use a model with vision to show it pictures.",
            ),
        )
    return stripped
