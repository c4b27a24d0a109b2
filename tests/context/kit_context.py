"""Helpers the context and compaction tests share: small tools and a harness factory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ketch import hookimpl
from ketch.commands import SlashContext
from ketch.testing import Harness
from ketch.tools import Access, Effect, Tool, ToolContext, ToolResult

MARKER = "MARKER-7f3a: always run the linter before you answer"


class BlobInput(BaseModel):
    name: str
    size: int = 4000


class Blob(Tool):
    """A read-only tool whose output is as large as asked (an old large tool result)."""

    name = "read_blob"
    description = "Return a large blob of text."
    input_model = BlobInput
    effects = frozenset({Effect.READ})
    mutating = False

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        line = f"{args.name}: " + "lorem ipsum dolor sit amet " * 3 + "\n"
        return ToolResult.success((line * (args.size // len(line) + 1))[: args.size])


class WriteInput(BaseModel):
    path: str
    content: str = ""


class WriteFile(Tool):
    """Named like the fs plugin's tool, so compaction counts it as a file change."""

    name = "write_file"
    description = "Write a file in the workspace."
    input_model = WriteInput
    effects = frozenset({Effect.WRITE})
    mutating = True

    def accesses(self, args: Any, ctx: ToolContext) -> list[Access]:
        return [Access(effect=Effect.WRITE, target=str((ctx.workspace / args.path).resolve()))]

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        target = ctx.workspace / args.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(args.content)
        return ToolResult.success(f"wrote {args.path}")


class ToolsPlugin:
    @hookimpl
    def ketch_register_tools(self, register: Any) -> None:
        register(Blob())
        register(WriteFile())


def harness(
    tmp_path: Path,
    script: list[dict[str, Any]],
    *,
    tools: bool = False,
    agents: str | None = MARKER,
    **kw: Any,
) -> Harness:
    """A harness with only the context, budget and compact plugins (plus the guards) loaded."""
    workspace = tmp_path / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    if agents is not None:
        (workspace / "AGENTS.md").write_text(agents + "\n", encoding="utf-8")
    plugins = [*kw.pop("plugins", []), *([("testtools", ToolsPlugin())] if tools else [])]
    kw.setdefault("bundled", ["context", "budget", "compact"])
    return Harness.create(tmp_path, script=script, plugins=plugins, **kw)


def slash(h: Harness, name: str, argument: str = "") -> str:
    """Run a slash command the way a frontend does; returns what it printed."""
    import asyncio
    import inspect

    out: list[str] = []
    ctx = SlashContext(kernel=h.kernel, session=h.session, argument=argument, print=out.append)
    result = h.kernel.commands[name].slash_run(ctx)  # type: ignore[misc]
    if inspect.isawaitable(result):
        asyncio.run(result)  # type: ignore[arg-type]
    return "\n".join(out)


def big(label: str, chars: int = 2000) -> str:
    return (label + " " + "word " * chars)[:chars]
