"""Small tools the permission-engine loop tests load in-process: a mutating file
writer, a read-only reader, and a command tool that declares a command line as its
access but only reports it (policy is what is under test, not execution)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ketch import hookimpl
from ketch.tools import Access, Effect, Tool, ToolContext, ToolResult


class PathInput(BaseModel):
    path: str


class CommandInput(BaseModel):
    command: str


def _target(ctx: ToolContext, path: str) -> Path:
    return Path(os.path.realpath(ctx.workspace / path))


class TouchFile(Tool):
    name = "touch_file"
    description = "Create a file."
    input_model = PathInput
    effects = frozenset({Effect.WRITE})
    mutating = True

    def accesses(self, args: Any, ctx: ToolContext) -> list[Access]:
        return [Access(effect=Effect.WRITE, target=str(_target(ctx, args.path)))]

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        _target(ctx, args.path).write_text("touched")
        return ToolResult.success(f"created {args.path}")


class Peek(Tool):
    name = "peek"
    description = "Read a file."
    input_model = PathInput
    effects = frozenset({Effect.READ})
    mutating = False

    def accesses(self, args: Any, ctx: ToolContext) -> list[Access]:
        return [Access(effect=Effect.READ, target=str(_target(ctx, args.path)))]

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return ToolResult.success(_target(ctx, args.path).read_text())


class RunCommand(Tool):
    name = "run_command"
    description = "Report a command line (it is not executed)."
    input_model = CommandInput
    effects = frozenset({Effect.EXECUTE})
    mutating = True

    def accesses(self, args: Any, ctx: ToolContext) -> list[Access]:
        return [
            Access(effect=Effect.EXECUTE, target=args.command, detail={"cwd": str(ctx.workspace)})
        ]

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return ToolResult.success(f"ran: {args.command}")


@hookimpl
def ketch_register_tools(register: Any) -> None:
    register(TouchFile())
    register(Peek())
    register(RunCommand())
