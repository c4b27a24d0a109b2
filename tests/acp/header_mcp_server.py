"""A streamable-HTTP MCP server whose one tool tells a request header back
(``python header_mcp_server.py PORT``): proof that the editor's headers arrive."""

from __future__ import annotations

import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("ketch-header-test")


@server.tool(description="The value of one HTTP request header.")
def header(name: str, ctx: Context) -> str:
    headers = ctx.headers or {}
    return str({k.lower(): v for k, v in dict(headers).items()}.get(name.lower(), "(absent)"))


server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
