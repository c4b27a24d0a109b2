"""MCP servers the Agent SDK program hosts in its own process (``create_sdk_mcp_server``).

``--mcp-config`` names them with ``"type": "sdk"``; ketch is their MCP client over the
control protocol: each JSON-RPC message goes out as an ``mcp_message`` control request
and the server's answer comes back as its response. On ``initialize`` ketch does the
MCP handshake and lists each server's tools; they are offered as
``mcp__SERVER__TOOL`` like any MCP server's, and the policy votes on every call like
any MCP tool's (they count as executing code ketch cannot inspect: ``allowed_tools``
or an allow rule lets them run without asking).
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from ketch.api import Effect, Tool, ToolContext, ToolResult

if TYPE_CHECKING:  # pragma: no cover
    from ketch_headless.control import ControlChannel

PROTOCOL_VERSION = "2025-06-18"
START_TIMEOUT = 30.0
CALL_TIMEOUT = 300.0
MAX_OUTPUT = 30_000
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class AnyInput(BaseModel):
    """The server checks the input against its own schema."""

    model_config = ConfigDict(extra="allow")


@dataclass
class SdkMcpServer:
    name: str
    channel: ControlChannel
    tools: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    async def rpc(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        message_id = next(self._ids)
        answer = await self.channel.request(
            {
                "subtype": "mcp_message",
                "server_name": self.name,
                "message": {"jsonrpc": "2.0", "id": message_id, "method": method, "params": params},
            },
            timeout,
        )
        response = answer.get("mcp_response")
        if not isinstance(response, dict):
            raise RuntimeError(f"{method}: the program sent no mcp_response")
        if "error" in response:
            error = response["error"]
            text = error.get("message") if isinstance(error, dict) else error
            raise RuntimeError(f"{method}: {text}")
        return response.get("result")

    async def notify(self, method: str) -> None:
        await self.channel.request(
            {
                "subtype": "mcp_message",
                "server_name": self.name,
                "message": {"jsonrpc": "2.0", "method": method},
            },
            START_TIMEOUT,
        )

    async def start(self) -> None:
        await self.rpc(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "ketch", "version": "0"},
            },
            START_TIMEOUT,
        )
        await self.notify("notifications/initialized")
        listed = await self.rpc("tools/list", {}, START_TIMEOUT)
        tools = listed.get("tools") if isinstance(listed, dict) else None
        self.tools = [t for t in tools or [] if isinstance(t, dict) and t.get("name")]


class SdkMcpTool(Tool[AnyInput]):
    repeatable: ClassVar[bool] = False

    def __init__(self, server: SdkMcpServer, remote: dict[str, Any]) -> None:
        self.server = server
        self.remote_name = str(remote["name"])
        name = f"mcp__{_UNSAFE.sub('_', server.name)}__{_UNSAFE.sub('_', self.remote_name)}"
        self.name = name[:64]  # type: ignore[misc]
        described = remote.get("description") or f"{self.remote_name} (MCP server {server.name})"
        self.description = str(described)[:2000]  # type: ignore[misc]
        schema = remote.get("inputSchema")
        self.schema = schema if isinstance(schema, dict) else {"type": "object"}
        annotations = remote.get("annotations") or {}
        read_only = isinstance(annotations, dict) and annotations.get("readOnlyHint") is True
        self.effects = frozenset({Effect.EXECUTE})  # type: ignore[misc]
        self.mutating = not read_only  # type: ignore[misc]
        self.input_model = AnyInput

    def input_schema(self) -> dict[str, Any]:
        return self.schema

    def summary(self, args: BaseModel) -> str:
        body = json.dumps(args.model_dump(), ensure_ascii=False, default=str)
        return f"MCP {self.server.name}/{self.remote_name} {body[:400]}"

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        from ketch_headless.control import ControlError

        try:
            result = await self.server.rpc(
                "tools/call",
                {"name": self.remote_name, "arguments": args.model_dump()},
                CALL_TIMEOUT,
            )
        except (ControlError, RuntimeError) as exc:
            return ToolResult.error(
                f"[ketch] the program's MCP server '{self.server.name}' failed on '{self.remote_name}': {exc}"
            )
        text = render(result)
        if isinstance(result, dict) and result.get("isError"):
            return ToolResult.error(text or "(the MCP tool reported an error without a message)")
        return ToolResult.success(text)


def render(result: Any) -> str:
    parts: list[str] = []
    content = result.get("content") if isinstance(result, dict) else None
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            parts.append(f"[{block.get('type', 'unknown')} content, not shown]")
    if not parts and isinstance(result, dict) and result.get("structuredContent") is not None:
        parts.append(json.dumps(result["structuredContent"], ensure_ascii=False, default=str))
    text = "\n".join(parts)
    return text if len(text) <= MAX_OUTPUT else text[:MAX_OUTPUT] + "\n[ketch: output cut]"


async def start_servers(channel: ControlChannel) -> None:
    """Handshake with every SDK server ``--mcp-config`` named; register their tools."""
    names = [*(getattr(channel.kernel.args, "sdk_mcp_servers", None) or {})]
    names += [n for n in channel.sdk_server_names if n not in names]
    tools = channel.kernel.tools
    for name in names:
        if name in channel.sdk_servers:
            continue
        server = SdkMcpServer(str(name), channel)
        channel.sdk_servers[server.name] = server
        try:
            await server.start()
        except Exception as exc:  # noqa: BLE001 - a broken server is reported, never fatal
            server.error = str(exc) or type(exc).__name__
            channel.notice(
                f"the program's MCP server '{server.name}' did not start ({server.error}); running on without its tools"
            )
            continue
        for remote in server.tools:
            tool = SdkMcpTool(server, remote)
            if tool.name in tools:
                channel.notice(f"MCP tool {tool.name} of the program clashes with another; skipped")
                continue
            tool.plugin = "headless"
            tools[tool.name] = tool
