"""What every file tool shares: the path field, and remembering the path it declared.

``accesses()`` resolves the path and declares it; the policy decides on that; ``run()``
resolves again and refuses if the answer changed in between (a symlink swapped while
the user was reading the approval prompt), so what runs is what was approved.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel

from ketch.api import Tool, ToolContext, ToolResult
from ketch_tool_kit.paths import PathProblem, check_path_text, display, resolve

PathText = Annotated[str, AfterValidator(check_path_text)]
ArgsT = TypeVar("ArgsT", bound=BaseModel)  # a tool's input model (``Tool`` is generic in it)


def strip_titles(schema: Any) -> Any:
    """Drop pydantic's per-field ``title``s: the model pays for every schema token."""
    if isinstance(schema, dict):
        return {
            k: strip_titles(v)
            for k, v in schema.items()
            if not (k == "title" and isinstance(v, str))
        }
    if isinstance(schema, list):
        return [strip_titles(v) for v in schema]
    return schema


class CompactSchema(Tool[ArgsT]):
    """A tool whose input schema carries no redundant titles."""

    def input_schema(self) -> dict[str, Any]:
        return strip_titles(super().input_schema())  # type: ignore[no-any-return]


class FsTool(CompactSchema[ArgsT]):
    """Base for tools whose input has a ``path``."""

    def __init__(self) -> None:
        self._declared: OrderedDict[tuple[str, str], Path] = OrderedDict()

    def target(self, args: Any, ctx: ToolContext) -> Path:
        return resolve(ctx.workspace, args.path)

    def remember(self, ctx: ToolContext, path: Path) -> None:
        self._declared[(ctx.session_id, ctx.tool_call_id)] = path
        while len(self._declared) > 512:
            self._declared.popitem(last=False)

    def checked_target(self, args: Any, ctx: ToolContext) -> Path | ToolResult:
        """The path to act on, or an error when it no longer is what was approved."""
        try:
            path = self.target(args, ctx)
        except ValueError as exc:
            return ToolResult.error(f"Invalid path {args.path!r}: {exc}")
        declared = self._declared.pop((ctx.session_id, ctx.tool_call_id), None)
        if declared is not None and declared != path:
            return ToolResult.error(
                f"{args.path} now resolves to {path}, not to {declared} as when it was checked "
                "(a symlink changed); nothing was done. Look at the path again before retrying."
            )
        return path

    @staticmethod
    def shown(path: Path, ctx: ToolContext) -> str:
        return display(path, ctx.workspace)


def os_error(exc: Exception, shown: str) -> ToolResult:
    """An OSError (or a PathProblem) as a one-line message the model can act on."""
    if isinstance(exc, PathProblem) or not isinstance(exc, OSError):
        return ToolResult.error(str(exc))
    reason = exc.strerror or type(exc).__name__
    if isinstance(exc, PermissionError):
        return ToolResult.error(f"{shown}: permission denied by the operating system ({reason})")
    return ToolResult.error(f"{shown}: {reason}")
