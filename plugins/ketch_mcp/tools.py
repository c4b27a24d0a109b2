"""One ketch tool per MCP tool: ``mcp__SERVER__TOOL``, the server's schema, its result as text.

The model sees the server's input schema (cleaned of invisible characters); input is
checked against it with ``jsonschema`` before anything reaches the server, so a bad
call comes back as the loop's usual "Invalid input" note. MCP tools are code ketch
cannot inspect: they execute and may use the network, and they count as mutating
unless the server marks them read-only (``readOnlyHint``); either way the policy
votes on every call.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator

from ketch.api import Access, Effect, Tool, ToolContext, ToolResult
from ketch_mcp.text import cap, clean_description, clean_schema, strip_invisible

if TYPE_CHECKING:  # pragma: no cover
    from ketch_mcp.runtime import McpRuntime

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
NAME_LIMIT = 64  # what OpenAI and Anthropic accept for a tool name


def ketch_name(server: str, tool: str) -> str:
    """``mcp__SERVER__TOOL``, in the characters every provider accepts."""
    return f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"[:NAME_LIMIT]


def input_model_for(name: str, schema: dict[str, Any]) -> type[BaseModel]:
    """A pydantic model that accepts exactly what ``schema`` accepts (extra keys kept)."""
    from jsonschema import exceptions, validators

    try:
        cls = validators.validator_for(schema)
        cls.check_schema(schema)
        validator: Any = cls(schema)
    except exceptions.SchemaError:
        validator = None  # the server's schema is broken: accept any object; the server decides

    def problems(data: Any) -> str:
        if validator is None:
            return "" if isinstance(data, dict) else "the input must be a JSON object"
        errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
        lines = []
        for error in errors[:5]:
            where = "/".join(str(p) for p in error.absolute_path)
            lines.append(f"{where + ': ' if where else ''}{cap(error.message, 300)}")
        return "; ".join(lines)

    class McpInput(BaseModel):
        model_config = ConfigDict(extra="allow")

        @model_validator(mode="before")
        @classmethod
        def _against_schema(cls, data: Any) -> Any:
            found = problems(data)
            if found:
                raise ValueError(found)
            return data

    McpInput.__name__ = McpInput.__qualname__ = (
        "".join(p.title() for p in name.split("_") if p) + "Input"
    )
    return McpInput


class McpTool(Tool[BaseModel]):
    """A tool of one MCP server, called through the plugin's background runtime."""

    repeatable: ClassVar[bool] = False

    def __init__(
        self, runtime: McpRuntime, server: str, remote: Any, *, timeout: float, max_output: int
    ) -> None:
        self.runtime = runtime
        self.server = server
        self.remote_name: str = remote.name
        self.name = ketch_name(server, remote.name)  # type: ignore[misc]
        self.raw_description: str | None = remote.description
        self.raw_schema: dict[str, Any] = dict(remote.input_schema or {"type": "object"})
        described = (
            clean_description(remote.description) or f"{remote.name} (MCP server '{server}')"
        )
        self.description = described  # type: ignore[misc]
        self.schema = clean_schema(self.raw_schema)
        annotations = getattr(remote, "annotations", None)
        read_only = bool(annotations is not None and annotations.read_only_hint)
        self.effects = frozenset({Effect.EXECUTE, Effect.NETWORK})  # type: ignore[misc]
        self.mutating = not read_only  # type: ignore[misc]
        self.input_model = input_model_for(self.name, self.raw_schema)
        self.timeout = timeout
        self.max_output = max_output

    def input_schema(self) -> dict[str, Any]:
        return self.schema

    def accesses(self, args: BaseModel, ctx: ToolContext) -> list[Access]:
        # Deliberately none: an EXECUTE target is read as a shell command line and a
        # NETWORK one as a web host by the guards and the policy, and neither is what
        # an MCP call is. An untargeted call is judged by the tool's name and effects:
        # it asks in manual and assisted, and "always allow" scopes to this one tool.
        return []

    def summary(self, args: BaseModel) -> str:
        body = json.dumps(args.model_dump(), ensure_ascii=False, default=str)
        return f"MCP {self.server}/{self.remote_name} {cap(body, 400, 'input')}"

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        arguments = args.model_dump()
        try:
            result = await self.runtime.call(self.server, self.remote_name, arguments, self.timeout)
        except TimeoutError:
            return ToolResult.error(
                f"[ketch] MCP tool '{self.name}' did not answer within {self.timeout:g} s and was cancelled "
                "([mcp] timeout). Try a smaller request, or do without it."
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a dead server is a tool error, never a crash
            return ToolResult.error(
                f"[ketch] MCP server '{self.server}' failed on '{self.remote_name}': {describe_error(exc)}"
            )
        text = render_result(result)
        data = {"mcp_server": self.server, "tool": self.remote_name}
        output = cap(text, self.max_output, "MCP result")
        if getattr(result, "is_error", False):
            return ToolResult.error(
                output or "(the MCP tool reported an error without a message)", data=data
            )
        return ToolResult.success(output, data=data)


def render_result(result: Any) -> str:
    """MCP content blocks as text; images, audio and binary resources summarised."""
    parts: list[str] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(
                f"[{kind}: {block.mime_type}, about {len(block.data) * 3 // 4:,} bytes, not shown]"
            )
        elif kind == "resource_link":
            title = f" ({block.name})" if getattr(block, "name", None) else ""
            parts.append(f"[resource link: {block.uri}{title}]")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if text is not None:
                parts.append(f"[resource {resource.uri}]\n{text}")
            else:
                size = len(getattr(resource, "blob", "") or "") * 3 // 4
                parts.append(
                    f"[resource {resource.uri}: {resource.mime_type or 'binary'}, about {size:,} bytes, not shown]"
                )
        else:
            parts.append(f"[{kind or 'unknown'} content, not shown]")
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, default=str))
    return strip_invisible("\n".join(parts))


def describe_error(exc: BaseException) -> str:
    """One line for an exception, the first real one inside exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
