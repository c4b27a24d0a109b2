"""ketch: a terminal coding agent built as a pluggy micro-kernel.

This module stays import-light on purpose: ``ketch --version`` imports it and must
not pay for pluggy or pydantic. ``ketch.hookimpl`` and friends are resolved lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

PROJECT_NAME = "ketch"

if TYPE_CHECKING:  # pragma: no cover
    import pluggy

    from ketch.tools import Tool, tool

    hookimpl: pluggy.HookimplMarker
    hookspec: pluggy.HookspecMarker

__all__ = ["PROJECT_NAME", "__version__", "hookimpl", "hookspec", "Tool", "tool"]


def __getattr__(name: str) -> Any:
    if name in ("hookimpl", "hookspec"):
        from ketch import markers

        return getattr(markers, name)
    if name in ("Tool", "tool"):
        from ketch import tools

        return getattr(tools, name)
    raise AttributeError(f"module 'ketch' has no attribute {name!r}")
