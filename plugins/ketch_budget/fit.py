"""One request fitted to the model's window, and the meter after its response."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch.api import ContextOverflow, ProviderRequest, StashKey
from ketch_context_kit.budget import (
    RequestSize,
    calibrate,
    context_budget,
    effective_capacity,
    estimator_for,
    learn_capacity,
    learn_provider_window,
    plausible,
    reported_input_tokens,
    utilization,
    window_and_reserve,
)
from ketch_context_kit.request import fit_images, measure, overflow_report

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Message, Session, Tool, Usage

# The size of the request last built, to read the provider's reported tokens against.
REQUEST_SIZE = StashKey[RequestSize]()


async def build(
    session: Session, tools: list[Tool], overflow: int | None
) -> ProviderRequest | None:
    """The request for the next model call, fitted (``ketch_build_request``). After a
    provider's overflow error (``overflow``: the limit it named, 0 if none), None when
    no plugin can make room."""
    hooks = session.kernel.hooks
    capacity = None
    if overflow is not None:
        if not hooks.implemented("budget_fit_context"):
            return None
        window, reserve, _ = window_and_reserve(session)
        capacity = effective_capacity(overflow or window, reserve)
        learn_capacity(session, capacity)  # remembered for the session
    await learn_provider_window(session)
    budget = measure(session, tools)
    before = session.active
    # Plugins that shape the context make room (a compaction), or stop the turn with
    # their own explanation (``ContextOverflow``).
    await hooks.call_async("budget_fit_context", session=session, budget=budget, overflow=capacity)
    if session.active is not before:
        budget = measure(session, tools)
    if not budget.fits:
        raise ContextOverflow(overflow_report(session, budget))
    session.stash[REQUEST_SIZE] = estimator_for(session).request(
        budget.system, (), session.active, schema_units=budget.schema_units
    )
    reserve = window_and_reserve(session)[1]
    return ProviderRequest(
        model=session.model,
        system=budget.system,
        messages=fit_images(session, session.active),
        tools=budget.specs,
        max_output_tokens=reserve or session.kernel.settings.loop.max_output_tokens,
    )


def usage_fields(session: Session, usage: Usage, message: Message) -> dict[str, Any]:
    """The meter after a response: the active context over the effective capacity.

    The active context after a response is the request just sent plus the answer.
    The request's size is what the provider reported when that is plausible (it also
    calibrates the estimator), else the estimate.
    """
    capacity = context_budget(session).capacity
    size = session.stash.get(REQUEST_SIZE)
    reported = reported_input_tokens(usage.input_tokens, usage.cached_tokens)
    if size is not None:
        calibrate(session, size, reported)
    estimator = estimator_for(session)  # calibrated by this very report
    if size is not None:
        request_tokens = (
            reported if plausible(size, reported) else estimator.units(size.units) + size.overhead
        )
    else:
        request_tokens = reported or estimator.messages(session.active)
    context_tokens = request_tokens + estimator.message(message)
    return {
        "context_utilization": utilization(context_tokens, capacity),
        "context_tokens": context_tokens,
        "effective_capacity": capacity,
    }
