"""ketch_budget: each request fitted to the model's context window, and the meter.

Before every provider request the kernel asks for the request (``ketch_build_request``):
this plugin measures it (``ketch_context_kit.request``), asks the plugins that shape the
context to make room (its own hook ``budget_fit_context``, ``hookspecs.py``: compaction
answers it), stops the turn with an explanation when protected content alone does not
fit, and leaves images out for a model the catalog knows takes none. After a provider's
context-length error it lowers the session's capacity and fits again, when a plugin can
make room. After each response (``ketch_response_usage``) it calibrates the token
estimator and reports the meter's fields. Without it the kernel sends the whole active
context as it is. See docs/context.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Message, ProviderRequest, Session, Tool, Usage


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_budget import hookspecs

    pluginmanager.add_hookspecs(hookspecs)  # budget_fit_context


@hookimpl(optionalhook=True)
def verbatim_prompts(session: Session) -> str:
    """A first prompt far inside any model's window is fitted as it is (a longer one
    may be fitted otherwise: not sent early)."""
    return "(?s).{0,20000}"


@hookimpl
async def ketch_build_request(
    session: Session, tools: list[Tool], overflow: int | None
) -> ProviderRequest | None:
    from ketch_budget.fit import build

    return await build(session, tools, overflow)


@hookimpl
def ketch_response_usage(session: Session, usage: Usage, message: Message) -> dict[str, Any]:
    from ketch_budget.fit import usage_fields

    return usage_fields(session, usage, message)
