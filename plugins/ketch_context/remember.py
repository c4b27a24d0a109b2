"""The ``remember`` tool: the model adds a note to the project memory.

It declares a write to ``.ketch/memory.md``; the hard guards ask before any write under
``.ketch/``, so every note needs the user's approval (and is refused where no one can
approve, as in ``ketch -p`` without a terminal). Not offered in plan mode.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ketch.api import Access, Effect, Tool, ToolContext, ToolResult
from ketch_context import memory
from ketch_context.config import load


class RememberInput(BaseModel):
    note: str = Field(
        description="One durable fact about this project to keep for future sessions: a convention, a command that works, a decision and its reason. One line, under 500 characters. Never a secret.",
    )


def _path(ctx: ToolContext) -> Any:
    settings, _ = load(ctx.settings)
    return memory.memory_path(ctx.workspace, settings.memory_file)


class Remember(Tool[RememberInput]):
    name = "remember"
    description = (
        "Save a short note to the project memory (.ketch/memory.md), which ketch includes in the system "
        "prompt of every future session in this project. The user approves each note. Use it for facts "
        "worth knowing next time (conventions, working commands, decisions), not for temporary state."
    )
    input_model = RememberInput
    effects = frozenset({Effect.WRITE})
    mutating = True

    def accesses(self, args: Any, ctx: ToolContext) -> list[Access]:
        return [Access(effect=Effect.WRITE, target=str(_path(ctx).resolve()))]

    def summary(self, args: Any) -> str:
        return f"remember: {args.note[:200]}"

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        path = _path(ctx)
        try:
            number = memory.append(path, args.note, by="model")
        except memory.NoteRefused as exc:
            return ToolResult.error(f"[ketch] Not saved: {exc}.")
        except OSError as exc:
            return ToolResult.error(f"[ketch] Could not write {path}: {exc.strerror or exc}.")
        return ToolResult.success(
            f"Saved as note {number} in the project memory ({path.name}); future sessions will see it."
        )
