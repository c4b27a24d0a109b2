"""Tools the shell tests load into a ``ketch`` subprocess (``KETCH_LOAD=shelltest=shelltest_tools``).

* ``mark``: writes a marker file in the workspace (mutating: it asks in manual mode);
* ``wait_flag``: blocks until a flag file appears (or it is cancelled), so a test can
  type a steer while a tool runs without guessing at timings.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ketch import hookimpl
from ketch.tools import Access, Effect, Tool, ToolContext, ToolResult


class MarkInput(BaseModel):
    name: str


class Mark(Tool):
    name = "mark"
    description = "Create a marker file in the workspace."
    input_model = MarkInput
    effects = frozenset({Effect.WRITE})
    mutating = True

    def accesses(self, args: Any, ctx: ToolContext) -> list[Access]:
        return [Access(effect=Effect.WRITE, target=str((ctx.workspace / args.name).resolve()))]

    def summary(self, args: Any) -> str:
        return f"create {args.name}"

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        (ctx.workspace / args.name).write_text("marked\n")
        return ToolResult.success(
            f"created {args.name}", diff=f"--- /dev/null\n+++ {args.name}\n@@ -0,0 +1 @@\n+marked\n"
        )


class WaitInput(BaseModel):
    flag: str


class WaitFlag(Tool):
    name = "wait_flag"
    description = "Wait until a flag file exists."
    input_model = WaitInput
    effects = frozenset({Effect.EXECUTE})
    mutating = True

    def summary(self, args: Any) -> str:
        return f"wait for {args.flag}"

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        flag = Path(args.flag)
        for _ in range(1200):  # at most 60 s, then give up (a test would have failed anyway)
            if flag.exists():
                return ToolResult.success("flag seen")
            await asyncio.sleep(0.05)
        return ToolResult.error("flag never appeared")


@hookimpl
def ketch_register_tools(register: Any) -> None:
    register(Mark())
    register(WaitFlag())
