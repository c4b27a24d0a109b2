"""Tools for the ACP tests, loaded into ``ketch acp`` with ``KETCH_LOAD``.

``noisy`` writes to stdout three ways (print, the raw descriptor, a child process):
none of it may reach the protocol stream. ``update_plan`` is a plan tool in Codex's
shape, which the agent shows as an ACP plan.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from pydantic import BaseModel, Field

from ketch import hookimpl
from ketch.tools import Tool, ToolContext, ToolResult


class NoisyInput(BaseModel):
    text: str = "NOISE"


class Noisy(Tool):
    name = "noisy"
    description = "Writes to stdout."
    input_model = NoisyInput
    effects = frozenset()
    mutating = False

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        print(f"{args.text} from print")
        sys.stdout.flush()
        os.write(1, f"{args.text} from fd 1\n".encode())
        subprocess.run([sys.executable, "-c", f"print('{args.text} from a child')"], check=True)
        return ToolResult.success("made some noise")


class PlanStep(BaseModel):
    step: str
    status: str


class PlanInput(BaseModel):
    plan: list[PlanStep] = Field(default_factory=list)


class UpdatePlan(Tool):
    name = "update_plan"
    description = "Record the plan."
    input_model = PlanInput
    effects = frozenset()
    mutating = False

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return ToolResult.success("plan recorded")


@hookimpl
def ketch_register_tools(register: Any) -> None:
    register(Noisy())
    register(UpdatePlan())
