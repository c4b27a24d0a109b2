"""ketch_function_tools: a plain typed function registered as a tool.

``register(fn)`` in ``ketch_register_tools`` hands the kernel a function; the kernel asks
for a tool made of it (``ketch_tool_from``) and this plugin answers with one whose input
schema is the function's signature and whose description is its docstring
(``functions.py``). Essential: an allow-list (``KETCH_PLUGINS``, ``[plugins] only``) or
``--no-plugin`` never blocks it, so a third-party plugin written as docs/plugins.md
teaches keeps its tools. With no plugin loaded at all (``KETCH_AUTOLOAD=none``) a plugin
that registers a function instead of a ``Tool`` fails, with a one-line reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Tool


@hookimpl
def ketch_tool_from(obj: Any) -> Tool | None:
    if isinstance(obj, type) or not callable(obj):
        return None
    from ketch_function_tools.functions import FunctionTool

    meta = getattr(obj, "__ketch_tool__", {})
    return FunctionTool(obj, name=meta.get("name"))
