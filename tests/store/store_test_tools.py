"""A tiny plugin the store tests load (in-process, or via KETCH_LOAD in a subprocess):
a read-only ``note`` tool that echoes its input with a marker, a mutating ``touch``
tool, and a policy vote that allows both (the real policy plugin is not needed here).
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel

from ketch import hookimpl
from ketch.policy import Vote
from ketch.tools import Effect, Tool, ToolContext, ToolResult


class NoteInput(BaseModel):
    text: str


class Note(Tool):
    name = "note"
    description = "Write a note; returns it with a marker."
    input_model = NoteInput
    effects = frozenset({Effect.READ})
    mutating = False

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        extra = os.environ.get("STORE_TEST_TOOL_OUTPUT", "")
        return ToolResult.success(f"noted: {args.text} {extra}".strip())


class TouchInput(BaseModel):
    path: str


class Touch(Tool):
    name = "touch"
    description = "Create an empty file in the workspace."
    input_model = TouchInput
    effects = frozenset({Effect.WRITE})
    mutating = True

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        (ctx.workspace / args.path).write_text("")
        return ToolResult.success(f"created {args.path}")


@hookimpl
def ketch_register_tools(register: Any) -> None:
    register(Note())
    register(Touch())
    register(Pause())


@hookimpl
def ketch_policy_vote(call: Any, snapshot: Any, session: Any) -> Vote | None:
    if call.tool in ("note", "touch", "pause"):
        return Vote(decision="allow", reason="store tests allow their own tools")
    return None


class PauseInput(BaseModel):
    seconds: float
    text: str = ""


class Pause(Tool):
    name = "pause"
    description = "Wait a while (a long-running tool), then echo the text."
    input_model = PauseInput
    effects = frozenset({Effect.READ})
    mutating = False

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        import asyncio

        await asyncio.sleep(args.seconds)
        return ToolResult.success(f"paused: {args.text}")
