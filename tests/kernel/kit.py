"""Small plugins and helpers the kernel tests share."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ketch import hookimpl
from ketch.policy import Vote
from ketch.tools import Access, Effect, Tool, ToolContext, ToolResult


class EchoInput(BaseModel):
    text: str = Field(description="what to echo")


class Echo(Tool):
    """A read-only tool: offered in plan mode."""

    name = "echo"
    description = "Echo the text back."
    input_model = EchoInput
    effects = frozenset({Effect.READ})
    mutating = False
    runs: list[str] = []

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        Echo.runs.append(args.text)
        return ToolResult.success(args.text)


class TouchInput(BaseModel):
    path: str


class Touch(Tool):
    """A mutating tool: never offered in plan mode."""

    name = "touch"
    description = "Create an empty file."
    input_model = TouchInput
    effects = frozenset({Effect.WRITE})
    mutating = True

    def accesses(self, args: Any, ctx: ToolContext) -> list[Access]:
        return [Access(effect=Effect.WRITE, target=str((ctx.workspace / args.path).resolve()))]

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        (ctx.workspace / args.path).write_text("")
        return ToolResult.success(f"created {args.path}")


class Boom(Tool):
    name = "boom"
    description = "Always raises."
    input_model = EchoInput
    effects = frozenset({Effect.READ})
    mutating = False

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        raise RuntimeError("kaboom " + args.text)


class Sleepy(Tool):
    name = "sleepy"
    description = "Sleeps until cancelled."
    input_model = EchoInput
    effects = frozenset({Effect.READ})
    mutating = False
    started = asyncio.Event

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        await asyncio.sleep(3600)
        return ToolResult.success("woke")


class ToolsPlugin:
    @hookimpl
    def ketch_register_tools(self, register: Any) -> None:
        for tool in (Echo(), Touch(), Boom(), Sleepy()):
            register(tool)


class VotingPlugin:
    """Votes ``decision`` on every call (or per tool via ``per_tool``); records snapshots."""

    def __init__(
        self,
        decision: str | None = "allow",
        per_tool: dict[str, str] | None = None,
        scope: str | None = None,
    ) -> None:
        self.decision = decision
        self.per_tool = per_tool or {}
        self.scope = scope
        self.snapshots: list[Any] = []
        self.calls: list[Any] = []

    @hookimpl
    def ketch_policy_vote(self, call: Any, snapshot: Any, session: Any) -> Vote | None:
        self.snapshots.append(snapshot)
        self.calls.append(call)
        decision = self.per_tool.get(call.tool, self.decision)
        if decision is None:
            return None
        return Vote(decision=decision, reason=f"test says {decision}", scope=self.scope)  # type: ignore[arg-type]


def tools_plugins(
    decision: str | None = "allow", **kw: Any
) -> tuple[list[tuple[str, Any]], VotingPlugin]:
    voter = VotingPlugin(decision, **kw)
    return [("testtools", ToolsPlugin()), ("testpolicy", voter)], voter


def make_distribution(
    site: Path,
    name: str,
    module_source: str,
    *,
    entry_name: str | None = None,
    version: str = "1.0",
    module: str | None = None,
) -> Path:
    """Install a fake distribution: a module plus a dist-info with a ``ketch`` entry point."""
    module = module or name.replace("-", "_")
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(textwrap.dedent(module_source), encoding="utf-8")
    dist = site / f"{name.replace('-', '_')}-{version}.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )
    (dist / "entry_points.txt").write_text(
        f"[ketch]\n{entry_name or name} = {module}\n", encoding="utf-8"
    )
    return dist
