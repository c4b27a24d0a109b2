"""ketch_concurrent_calls: calls of one response that are safe together run side by side.

The kernel asks ``ketch_run_calls`` to run a response's calls; this plugin answers
(``together.py``): calls whose tools are safe to run side by side (read-only tools, and
tools that declare ``concurrent``) run concurrently when they come one after another
(at most ten at once); every other call runs alone, in order. The kernel still decides
every call, in order, one approval at a time, and the results go back in call order.
Without it (``--no-plugin concurrent_calls``) every call runs alone: the same results,
slower. See docs/tools.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Awaitable, Callable

    from ketch.api import Session, ToolCallPart


@hookimpl
async def ketch_run_calls(
    session: Session,
    calls: list[ToolCallPart],
    decide: Callable[[ToolCallPart], Awaitable[Any]],
    finish: Callable[[ToolCallPart, Any], Awaitable[Any]],
) -> bool:
    from ketch_concurrent_calls.together import run_calls

    await run_calls(session.kernel.tools, calls, decide, finish)
    return True
