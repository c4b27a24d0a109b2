"""Which calls of a response run together, and running them so."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Tool, ToolCallPart

# Calls of one response running side by side at most (a response may propose dozens of reads).
MAX_CONCURRENT = 10


def side_by_side(tools: Mapping[str, Tool], call: ToolCallPart) -> bool:
    """Whether ``call`` may run beside others like it: its tool says so (``concurrent``),
    or, saying nothing, changes nothing."""
    tool = tools.get(call.name)
    if tool is None or call.input_error:
        return False
    declared = getattr(tool, "concurrent", None)
    return bool(declared) if declared is not None else not tool.mutating


async def run_calls(
    tools: Mapping[str, Tool],
    calls: list[ToolCallPart],
    decide: Callable[[ToolCallPart], Awaitable[Any]],
    finish: Callable[[ToolCallPart, Any], Awaitable[Any]],
) -> None:
    """Each run of consecutive side-by-side calls: decided in order (approvals one at a
    time), then run together; every other call decided and run alone, in order."""
    index = 0
    while index < len(calls):
        batch = [calls[index]]
        if side_by_side(tools, calls[index]):
            while index + len(batch) < len(calls) and side_by_side(
                tools, calls[index + len(batch)]
            ):
                batch.append(calls[index + len(batch)])
        index += len(batch)
        if len(batch) == 1:
            await finish(batch[0], await decide(batch[0]))
            continue
        decided = [await decide(call) for call in batch]
        limit = asyncio.Semaphore(MAX_CONCURRENT)
        await together(
            [_limited(limit, finish, call, d) for call, d in zip(batch, decided, strict=True)]
        )


async def _limited(
    limit: asyncio.Semaphore,
    finish: Callable[[ToolCallPart, Any], Awaitable[Any]],
    call: ToolCallPart,
    decided: Any,
) -> Any:
    async with limit:
        return await finish(call, decided)


async def together(runs: list[Coroutine[Any, Any, Any]]) -> None:
    """Run side by side. When one fails (or the turn is cancelled), the rest are
    cancelled and waited for before the failure goes on: none keeps running unseen."""
    tasks = [asyncio.ensure_future(run) for run in runs]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
