"""The ``todo`` tool and the ``todo`` event it sends."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from ketch.api import Effect, Event, ToolContext, ToolResult
from ketch_tool_kit.base import CompactSchema

MAX_TODOS = 50
MARKS = {"completed": "✔", "in_progress": "▸", "pending": "☐"}


class TodoItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(
        min_length=1, max_length=500, description="The task, imperative: 'Fix the lexer'."
    )
    status: Literal["pending", "in_progress", "completed"] = Field(
        description="pending, in_progress (one task at a time) or completed."
    )
    active_form: str = Field(
        "",
        max_length=500,
        description="The task as it is being done, shown while in progress: 'Fixing the lexer'.",
    )


class TodoInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    todos: list[TodoItem] = Field(
        max_length=MAX_TODOS, description="The whole list, in order: it replaces the previous one."
    )


class TodoEvent(Event):
    """The model's task list changed (or a resumed session's is shown again): the whole
    list, each item ``{content, status, active_form}``."""

    type: Literal["todo"] = "todo"
    todos: list[dict[str, Any]]


def render(todos: list[dict[str, Any]]) -> str:
    """The list as the model and the journal see it: one line per task."""
    done = sum(t["status"] == "completed" for t in todos)
    lines = [f"{done}/{len(todos)} done"]
    lines += [f"{MARKS.get(t['status'], '?')} {t['content']}" for t in todos]
    return "\n".join(lines)


class Todo(CompactSchema[TodoInput]):
    name = "todo"
    description = (
        "Keep a task list for work with several steps, shown to the user as you go. Send the "
        "whole list each time (it replaces the last one); mark the task you start in_progress "
        "(one at a time) and each task completed as soon as it is done. Skip it for a simple, "
        "one-step request."
    )
    input_model = TodoInput
    effects: ClassVar[frozenset[Effect]] = frozenset()  # it touches nothing but the list shown
    mutating = False
    repeatable = True  # the same list twice is a legitimate "nothing changed"

    def summary(self, args: TodoInput) -> str:
        done = sum(t.status == "completed" for t in args.todos)
        current = next((t for t in args.todos if t.status == "in_progress"), None)
        doing = f" · {current.active_form or current.content}" if current else ""
        return f"{done}/{len(args.todos)} done{doing}"

    async def run(self, args: TodoInput, ctx: ToolContext) -> ToolResult:
        doing = [t for t in args.todos if t.status == "in_progress"]
        if len(doing) > 1:
            return ToolResult.error(
                f"{len(doing)} tasks are in_progress; keep one in_progress at a time and send the list again."
            )
        todos = [t.model_dump() for t in args.todos]
        ctx.plugin_state("todo")["todos"] = todos
        ctx.emit(TodoEvent(todos=todos))
        return ToolResult.success(render(todos) if todos else "The task list is empty now.")
