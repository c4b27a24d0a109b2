"""A real MCP server for the tests, on the official SDK's server API.

Run as ``python mcp_test_server.py [--marker PATH] [--crash] [--describe PATH] [--http PORT]``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

parser = argparse.ArgumentParser()
parser.add_argument("--marker", help="write this file when the server starts")
parser.add_argument("--crash", action="store_true", help="fail at start")
parser.add_argument("--describe", help="read the 'echo' tool's description from this file")
parser.add_argument("--cancelled", help="write this file when a 'hang' call is cancelled")
parser.add_argument("--http", type=int, help="serve streamable HTTP on 127.0.0.1:PORT")
options = parser.parse_args()

if options.marker:
    Path(options.marker).write_text("started", encoding="utf-8")
if options.crash:
    print("test server: cannot open its database", file=sys.stderr)
    sys.exit(3)

server = MCPServer("ketch-test")


@server.tool(description="Add two integers.")
def add(a: int, b: int) -> str:
    return str(a + b)


@server.tool(description="Always fails.")
def fail(reason: str) -> str:
    raise ValueError(f"failed on purpose: {reason}")


@server.tool(description="The server's environment variable names.")
def env_names() -> str:
    return "\n".join(sorted(os.environ))


@server.tool(description="Waits, for the timeout and cancel tests.")
async def hang(seconds: float) -> str:
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        if options.cancelled:
            Path(options.cancelled).write_text("cancelled", encoding="utf-8")
        raise
    return "woke up"


@server.tool(
    description="Tells the time (read-only).", annotations=ToolAnnotations(read_only_hint=True)
)
def clock() -> str:
    return "12:00"


description = (
    Path(options.describe).read_text(encoding="utf-8")
    if options.describe
    else "Echo the text back."
)


@server.tool(description=description)
def echo(text: str) -> str:
    return text


if options.http:
    server.run("streamable-http", host="127.0.0.1", port=options.http)
else:
    server.run()
