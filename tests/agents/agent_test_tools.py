"""Tools the agent and concurrency tests load into a ``ketch`` subprocess
(``KETCH_LOAD=agenttools=tests.agents.agent_test_tools``).

``slow_read`` is read-only (it reads one workspace file, so the real policy allows
it in every profile) and takes ``seconds``; ``stamp`` writes one workspace file (a
mutating tool: it runs alone, and asks under ``manual``). Both append when they
started and finished to the file named by ``AGENT_TEST_LOG``, so a test can tell
which calls ran side by side.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

from pydantic import BaseModel, Field

from ketch import hookimpl
from ketch.tools import Access, Effect, Tool, ToolContext, ToolResult


def _log(**entry: Any) -> None:
    path = os.environ.get("AGENT_TEST_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps(entry) + "\n")


class SlowReadInput(BaseModel):
    path: str
    seconds: float = Field(0.5, ge=0, le=30)


class SlowRead(Tool):
    name = "slow_read"
    description = "Read a workspace file, slowly."
    input_model = SlowReadInput
    effects = frozenset({Effect.READ})
    mutating = False

    def accesses(self, args: Any, ctx: ToolContext) -> list[Access]:
        return [Access(effect=Effect.READ, target=str((ctx.workspace / args.path).resolve()))]

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        started = time.time()
        await asyncio.sleep(args.seconds)
        text = (ctx.workspace / args.path).read_text(encoding="utf-8")
        _log(tool="slow_read", path=args.path, start=started, end=time.time())
        return ToolResult.success(text)


class StampInput(BaseModel):
    path: str
    seconds: float = Field(0.2, ge=0, le=30)


class Stamp(Tool):
    name = "stamp"
    description = "Write the time into a workspace file, slowly."
    input_model = StampInput
    effects = frozenset({Effect.WRITE})
    mutating = True

    def accesses(self, args: Any, ctx: ToolContext) -> list[Access]:
        return [Access(effect=Effect.WRITE, target=str((ctx.workspace / args.path).resolve()))]

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        started = time.time()
        await asyncio.sleep(args.seconds)
        (ctx.workspace / args.path).write_text(str(started), encoding="utf-8")
        _log(tool="stamp", path=args.path, start=started, end=time.time())
        return ToolResult.success(f"stamped {args.path}")


@hookimpl
def ketch_register_tools(register: Any) -> None:
    register(SlowRead())
    register(Stamp())
