"""ketch_catalog: what ketch knows about models without asking the provider, and ``/cost``.

Answers ``ketch_model_info`` from ``[models."NAME"]`` tables in config.toml (merged over
the shipped entry, or a model of its own) and from ``models.json`` shipped in this
package: context window, output limit, tools, images and prices per million tokens,
each entry with its source and date (LiteLLM's MIT model map; ``refresh.py`` rebuilds
it by hand). Models of a local kind cost 0: a provider plugin says which of its kinds
run on this machine through the ``catalog_local_kinds`` hook this plugin declares. Nothing is fetched at run time.
``/cost`` shows the session's tokens and what they cost. See docs/providers.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import Command, hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Event, Kernel, ModelInfo, Session, SlashContext


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_catalog import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def ketch_model_info(provider_kind: str, model: str, kernel: Kernel) -> ModelInfo | None:
    from ketch_catalog.catalog import lookup

    local = any(provider_kind in kinds for kinds in kernel.hooks.values("catalog_local_kinds"))
    # The [models] table of the loaded configuration (a trusted layer only).
    return lookup(provider_kind, model, kernel.settings.section("models"), local=local)


@hookimpl
def ketch_event_fields(session: Session, event: Event) -> dict[str, Any] | None:
    from ketch_catalog.pricing import event_fields

    return event_fields(session, event)


@hookimpl
def ketch_event(session: Session, event: Event) -> None:
    if event.type == "user_prompt" and not getattr(event, "steer", False):
        from ketch_catalog.pricing import new_turn

        new_turn(session)  # a turn's cost counts from its prompt


def _cost(ctx: SlashContext) -> None:
    from ketch_catalog.report import cost_report

    ctx.print(cost_report(ctx.session))


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    register(
        Command(
            name="cost",
            help="tokens used in this session and what they cost",
            slash=True,
            slash_run=_cost,
        )
    )
