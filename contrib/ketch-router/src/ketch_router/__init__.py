"""ketch-router: a ``router`` provider kind that picks a configured provider per request
(by request size, by a model alias) and falls back to the next one when a provider
fails before answering. See the README for the configuration.

The entry module stays light: the router itself is imported when a provider is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, ProviderConfig, ProviderKind, Secret

__version__ = "0.1.0"


@hookimpl
def ketch_register_providers(register: Callable[[ProviderKind], None], kernel: Kernel) -> None:
    from ketch.api import ProviderKind

    # Routes are built through this kernel (its config layers, keys and provider kinds):
    # each kernel registers its own kind, so two kernels in one process share nothing.
    def create(config: ProviderConfig, key: Secret | None) -> Any:
        from ketch_router.router import create

        return create(config, kernel)

    register(
        ProviderKind(
            kind="router",
            create=create,
            description="routes each request to one of several configured providers, with fallback",
            default_model="auto",
            needs_key=False,
        )
    )
