"""ketch-router: a ``router`` provider kind that picks a configured provider per request
(by request size, by a model alias) and falls back to the next one when a provider
fails before answering. See the README for the configuration.

The entry module stays light: the router itself is imported when a provider is built.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, ProviderConfig, ProviderKind, Secret

__version__ = "0.1.0"

# Routes are built through the kernel (its config layers, keys and provider kinds).
# ketch_configure runs before any session builds a provider; a weak reference, so a
# test that boots many kernels does not keep them alive.
_kernel: weakref.ReferenceType[Kernel] | None = None


@hookimpl
def ketch_configure(kernel: Kernel) -> None:
    global _kernel
    _kernel = weakref.ref(kernel)


def _create(config: ProviderConfig, key: Secret | None) -> Any:
    from ketch_router.router import create

    return create(config, _kernel() if _kernel is not None else None)


@hookimpl
def ketch_register_providers(register: Callable[[ProviderKind], None]) -> None:
    from ketch.api import ProviderKind

    register(
        ProviderKind(
            kind="router",
            create=_create,
            description="routes each request to one of several configured providers, with fallback",
            default_model="auto",
            needs_key=False,
        )
    )
