"""ketch_tool_cache: the first request's tool schemas without importing the tool modules.

Before the tools are registered the kernel asks for registrations it need not call
(``ketch_cached_registrations``): this plugin answers with the tools that plugins
declaring ``@provides`` registered last time, kept in ``KETCH_CACHE_DIR/tools.json``
(``cache.py`` says when an entry is current). Such a tool's plugin registers for real
the first time anything beyond its schema is needed. Without this plugin every
``ketch_register_tools`` is called at start-up: the same tools, only slower.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel

HOOK = "ketch_register_tools"


@hookimpl
def ketch_cached_registrations(
    kernel: Kernel, hook: str, plugins: list[str]
) -> dict[str, list[Any]] | None:
    if hook != HOOK:
        return None
    from ketch_tool_cache.cache import cached_registrations

    return cached_registrations(kernel, plugins)
