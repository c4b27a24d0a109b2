"""ketch_catalog: what ketch knows about models without asking the provider, and ``/cost``.

Answers ``ketch_model_info`` from ``[models."NAME"]`` tables in config.toml (merged over
the shipped entry, or a model of its own) and from ``models.json`` shipped in this
package: context window, output limit, tools, images and prices per million tokens,
each entry with its source and date (LiteLLM's MIT model map; ``refresh.py`` rebuilds
it by hand). Models of a local kind (Ollama) cost 0. Nothing is fetched at run time.
``/cost`` shows the session's tokens and what they cost. See docs/providers.md.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch import hookimpl
from ketch.commands import Command

if TYPE_CHECKING:  # pragma: no cover
    from ketch.commands import SlashContext
    from ketch.kernel import Kernel
    from ketch.providers import ModelInfo

_kernel: weakref.ReferenceType[Any] | None = None


@hookimpl
def ketch_configure(kernel: Kernel) -> None:
    global _kernel
    _kernel = weakref.ref(kernel)


def configured_models() -> dict[str, Any]:
    """The ``[models]`` table of the loaded configuration (a trusted layer only)."""
    kernel = _kernel() if _kernel is not None else None
    return kernel.settings.section("models") if kernel is not None else {}


@hookimpl
def ketch_model_info(provider_kind: str, model: str) -> ModelInfo | None:
    from ketch_catalog.catalog import lookup

    return lookup(provider_kind, model, configured_models())


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
