"""A plain typed function as a tool: its signature is the input schema, its docstring
the description (and each argument's, Google or Sphinx style), ``@ketch.api.tool`` its
declared effects."""

from __future__ import annotations

import asyncio
import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from ketch.api import Effect, Tool, ToolContext, ToolResult

_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and per-argument descriptions.

    Understands Google style (``Args:`` sections) and Sphinx ``:param x:`` lines.
    """
    if not doc:
        return "", {}
    text = inspect.cleandoc(doc)
    params: dict[str, str] = {}
    description_lines: list[str] = []
    in_args = False
    current: str | None = None
    for line in text.splitlines():
        stripped = line.strip()
        sphinx = re.match(r":param\s+(?:\w+\s+)?(\w+)\s*:\s*(.*)", stripped)
        if sphinx:
            params[sphinx.group(1)] = sphinx.group(2).strip()
            continue
        if stripped.lower() in ("args:", "arguments:", "parameters:"):
            in_args = True
            continue
        if in_args:
            if stripped.endswith(":") and not line.startswith((" ", "\t")):
                in_args = False  # next section (Returns:, Raises:)
                continue
            match = _ARG_LINE.match(line)
            if match and line.startswith((" ", "\t")) and len(line) - len(line.lstrip()) <= 8:
                current = match.group(1).lstrip("*")
                params[current] = match.group(3).strip()
            elif current and stripped:
                params[current] = f"{params[current]} {stripped}".strip()
            continue
        if re.match(r"^(returns?|raises|yields|examples?):$", stripped.lower()):
            in_args = False
            current = None
            description_lines.append("\x00")  # stop collecting description
            continue
        description_lines.append(line)
    description = "\n".join(description_lines).split("\x00")[0].strip()
    return description, params


class FunctionTool(Tool[BaseModel]):
    """A tool made from a plain typed function: schema and description from its signature."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        effects: frozenset[Effect] | set[Effect] | None = None,
        mutating: bool | None = None,
    ) -> None:
        self.func = func
        self.name = name or func.__name__  # type: ignore[misc]
        doc_description, param_docs = parse_docstring(func.__doc__)
        self.description = description or doc_description or self.name  # type: ignore[misc]
        meta = getattr(func, "__ketch_tool__", {})
        declared = effects if effects is not None else meta.get("effects")
        self.effects = frozenset(declared or ())  # type: ignore[misc]
        if mutating is None:
            mutating = meta.get("mutating")
        if mutating is None:
            # Unknown effects are assumed mutating: safe by default (not offered in plan mode).
            mutating = not self.effects or bool(self.effects - {Effect.READ})
        self.mutating = mutating  # type: ignore[misc]
        self._wants_ctx = False
        self.input_model = self._build_model(func, param_docs)

    def _build_model(self, func: Callable[..., Any], docs: dict[str, str]) -> type[BaseModel]:
        hints = typing.get_type_hints(func)
        fields: dict[str, Any] = {}
        for param in inspect.signature(func).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"tool {self.name}: *args/**kwargs are not supported")
            annotation = hints.get(param.name, Any)
            if annotation is ToolContext or param.name == "ctx":
                self._wants_ctx = True
                continue
            default = ... if param.default is param.empty else param.default
            fields[param.name] = (
                annotation,
                Field(default, description=docs.get(param.name) or None),
            )
        model_name = "".join(part.title() for part in self.name.split("_")) + "Input"
        return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        kwargs = {k: getattr(args, k) for k in type(args).model_fields}
        if self._wants_ctx:
            kwargs["ctx"] = ctx
        if inspect.iscoroutinefunction(self.func):
            value = await self.func(**kwargs)
        else:
            value = await asyncio.to_thread(self.func, **kwargs)
        if isinstance(value, ToolResult):
            return value
        if value is None:
            return ToolResult.success("")
        if isinstance(value, str):
            return ToolResult.success(value)
        import json

        return ToolResult.success(json.dumps(value, default=str, ensure_ascii=False))
