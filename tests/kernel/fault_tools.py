"""Tools and hooks for the fault tests, loadable into a real ``ketch`` process with
``KETCH_LOAD=faults=tests.kernel.fault_tools``.

``quick`` answers at once; ``slow`` sleeps for a minute (a call still running when a
signal arrives). With ``FAULT_AFTER_QUICK=ketch``, the after-tool-use hook stops the
turn with a KetchError once ``quick`` ran; with ``=crash`` it raises a plain bug.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from pydantic import BaseModel

from ketch import hookimpl
from ketch.errors import KetchError
from ketch.tools import Access, Effect, Tool, ToolResult


class Empty(BaseModel):
    note: str = ""


class _Reads(Tool):
    """Declares a read inside the workspace, which every profile allows."""

    def accesses(self, args: Any, ctx: Any) -> list[Access]:
        return [Access(effect=Effect.READ, target=str(ctx.workspace / "notes.txt"))]


class Quick(_Reads):
    name = "quick"
    description = "Answers at once."
    input_model = Empty
    effects = frozenset({Effect.READ})
    mutating = False

    async def run(self, args: Any, ctx: Any) -> ToolResult:
        return ToolResult.success("quick done")


class Slow(_Reads):
    name = "slow"
    description = "Takes a minute."
    input_model = Empty
    effects = frozenset({Effect.READ})
    mutating = False

    async def run(self, args: Any, ctx: Any) -> ToolResult:
        await asyncio.sleep(60)
        return ToolResult.success("slow done")


@hookimpl
def ketch_register_tools(register: Any) -> None:
    register(Quick())
    register(Slow())


@hookimpl
def ketch_after_tool_use(call: Any) -> None:
    mode = os.environ.get("FAULT_AFTER_QUICK")
    if call.tool != "quick" or not mode:
        return
    if mode == "ketch":
        raise KetchError("the lint hook could not run: its config is missing")
    raise ZeroDivisionError("a plugin bug")
