"""``/cost``: the session's tokens, and their cost when the model's price is known."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch_catalog.pricing import STATE_KEY, PricedModel
from ketch_context_kit.budget import model_info

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session


def money(value: float) -> str:
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def cost_report(session: Session) -> str:
    usage = session.usage
    lines = [f"model     {session.model} ({session.provider.kind})"]
    tokens = f"tokens    input {usage.input_tokens:,}"
    if usage.cached_tokens:
        tokens += f" (cached {usage.cached_tokens:,})"
    tokens += f", output {usage.output_tokens:,}"
    if usage.reasoning_tokens:
        tokens += f" (reasoning {usage.reasoning_tokens:,})"
    lines.append(tokens)
    found = session.state.get(STATE_KEY)
    state: dict[str, Any] = found if isinstance(found, dict) else {}
    priced, unpriced = int(state.get("priced", 0)), int(state.get("unpriced", 0))
    total = float(state.get("cost_usd", 0.0))
    found_info = model_info(session)
    info = found_info if isinstance(found_info, PricedModel) else None
    if priced and not unpriced:
        lines.append(f"cost      {money(total)}")
    elif priced:
        lines.append(
            f"cost      at least {money(total)}: {unpriced} response(s) from a model without a known price are not counted"
        )
    elif unpriced or not (info and info.priced):
        lines.append(
            f"cost      unknown: no price for '{session.model}' (set input_price and output_price under [models.\"{session.model}\"] in config.toml)"
        )
    else:
        lines.append(f"cost      {money(0.0)} (no responses yet)")
    if info is not None and info.priced:
        cached = (
            f", cached input ${info.cached_input_price:g}"
            if info.cached_input_price is not None
            else ""
        )
        lines.append(
            f"prices    per million tokens: input ${info.input_price:g}, output ${info.output_price:g}{cached} ({info.source})"
        )
    return "\n".join(lines)
