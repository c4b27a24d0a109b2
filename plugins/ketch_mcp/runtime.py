"""MCP sessions on one background thread with its own event loop.

The SDK's sessions (anyio) belong to the loop that made them, while ketch asks for
tools from whatever thread or loop it is in (the headless frontend before
``asyncio.run``, the shell from inside its loop). So every session lives on one
dedicated thread, started once; a tool call from a turn crosses over with
``run_coroutine_threadsafe`` and is awaited with ``wrap_future``, so cancelling the
turn cancels the call on the server's side too.

Each server is held open by one task (the SDK's context managers must be entered
and left in the same task) until shutdown, which closes stdio servers the SDK's way:
stdin closed, then SIGTERM and SIGKILL to the server's own process group.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ketch_mcp.options import McpOptions, child_environment
from ketch_mcp.tools import describe_error

SHUTDOWN_TIMEOUT = 8.0  # the SDK's own stdio shutdown takes at most ~6 s per server


@dataclass
class Server:
    name: str
    config: Any  # ketch.settings.McpServer
    tools: list[Any] = field(default_factory=list)  # the SDK's Tool definitions
    session: Any = None
    error: str | None = None
    ready: asyncio.Event | None = None
    stop: asyncio.Event | None = None
    task: asyncio.Task[None] | None = None
    errlog: Any = None

    @property
    def transport(self) -> str:
        return f"http {self.config.url}" if self.config.url else f"stdio {self.config.command}"

    def stderr_tail(self) -> str:
        """The server's last stderr line, for a failure notice."""
        if self.errlog is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self.errlog.flush()
            self.errlog.seek(0)
            lines = [
                line.strip() for line in self.errlog.read()[-4000:].splitlines() if line.strip()
            ]
            return lines[-1][:300] if lines else ""
        return ""


class McpRuntime:
    def __init__(
        self,
        servers: dict[str, Any],
        *,
        workspace: Path,
        environ: dict[str, str],
        options: McpOptions,
    ) -> None:
        self.servers = {name: Server(name, config) for name, config in servers.items()}
        self.workspace = workspace
        self.environ = environ
        self.options = options
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    # --- starting ---------------------------------------------------------------------

    def start(self) -> list[str]:
        """Connect to every server in parallel; block until all are up or the startup
        timeout passed. Returns one notice per server that failed."""
        _quiet_sdk_logging()
        loop = asyncio.new_event_loop()
        self.loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="ketch-mcp", daemon=True)
        self._thread.start()
        atexit.register(self.close)
        future = asyncio.run_coroutine_threadsafe(self._connect_all(), loop)
        try:
            future.result(timeout=self.options.startup_timeout + SHUTDOWN_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - never fatal: report and run on without them
            for server in self.servers.values():
                if server.session is None and server.error is None:
                    server.error = f"did not start: {describe_error(exc)}"
        notices = []
        for server in self.servers.values():
            if server.error:
                tail = server.stderr_tail()
                notices.append(
                    f"MCP server '{server.name}' ({server.transport}) {server.error}"
                    + (f" (stderr: {tail})" if tail else "")
                    + "; running on without its tools"
                )
        return notices

    async def _connect_all(self) -> None:
        for server in self.servers.values():
            server.ready, server.stop = asyncio.Event(), asyncio.Event()
            server.task = asyncio.create_task(self._hold(server), name=f"mcp:{server.name}")
        waits = [asyncio.create_task(s.ready.wait()) for s in self.servers.values() if s.ready]
        _, pending = await asyncio.wait(waits, timeout=self.options.startup_timeout)
        for wait in pending:
            wait.cancel()
        late = [s for s in self.servers.values() if s.ready is not None and not s.ready.is_set()]
        for server in late:
            server.error = (
                f"did not start and list its tools within {self.options.startup_timeout:g} s"
            )
            if server.task is not None:
                server.task.cancel()
        if late:
            await asyncio.wait(
                [s.task for s in late if s.task is not None], timeout=SHUTDOWN_TIMEOUT
            )

    async def _hold(self, server: Server) -> None:
        """Open the connection, list the tools, and keep it open until shutdown."""
        from mcp import ClientSession

        assert server.ready is not None and server.stop is not None
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(server))
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                server.tools = await _list_tools(session)
                server.session = session
                server.ready.set()
                await server.stop.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - a server's failure is its own, reported once
            if server.session is None:
                server.error = f"failed to start: {describe_error(exc)}"
            else:
                server.error = f"stopped: {describe_error(exc)}"
        finally:
            server.session = None
            server.ready.set()

    def _transport(self, server: Server) -> Any:
        config = server.config
        if config.url:
            from mcp.client.streamable_http import streamable_http_client

            headers = _headers(config)
            if headers:
                return _http_with_headers(config.url, headers)
            return streamable_http_client(config.url)
        from mcp.client.stdio import StdioServerParameters, stdio_client

        if not config.command:
            raise ValueError("neither command nor url is configured")
        # The server's stderr goes to an anonymous file: never over ketch's own screen,
        # and its last line explains a failed start.
        server.errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - closed at shutdown
        params = StdioServerParameters(
            command=config.command,
            args=list(config.args),
            env=child_environment(self.environ, dict(config.env)),
            cwd=str(self.workspace),
        )
        return stdio_client(params, errlog=server.errlog)

    # --- calling --------------------------------------------------------------------------

    async def call(
        self, server_name: str, tool: str, arguments: dict[str, Any], timeout: float
    ) -> Any:
        """Call a tool from any loop: runs on the MCP thread; cancelling this cancels it there."""
        if self.loop is None or self._closed:
            raise RuntimeError("the MCP client is shut down")
        future = asyncio.run_coroutine_threadsafe(
            self._call(server_name, tool, arguments, timeout), self.loop
        )
        return await asyncio.wrap_future(future)

    async def _call(
        self, server_name: str, tool: str, arguments: dict[str, Any], timeout: float
    ) -> Any:
        server = self.servers[server_name]
        if server.session is None:
            raise RuntimeError(f"the server is not running ({server.error or 'not connected'})")
        return await asyncio.wait_for(server.session.call_tool(tool, arguments), timeout)

    # --- stopping ---------------------------------------------------------------------------

    def close(self) -> None:
        """Stop every server and the thread (idempotent; also run at exit)."""
        if self._closed or self.loop is None:
            return
        self._closed = True
        loop = self.loop
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._stop_all(), loop).result(
                timeout=SHUTDOWN_TIMEOUT + 2
            )
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=2)
        for server in self.servers.values():
            if server.errlog is not None:
                with contextlib.suppress(OSError):
                    server.errlog.close()
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)

    async def _stop_all(self) -> None:
        tasks = []
        for server in self.servers.values():
            if server.stop is not None:
                server.stop.set()
            if server.task is not None and not server.task.done():
                tasks.append(server.task)
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=SHUTDOWN_TIMEOUT)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=2)


def _headers(config: Any) -> dict[str, str]:
    """``headers = {NAME = "value"}`` of an HTTP server (an editor passes its servers'
    headers this way, e.g. ``Authorization``)."""
    raw = getattr(config, "headers", None) or {}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


@contextlib.asynccontextmanager
async def _http_with_headers(url: str, headers: dict[str, str]) -> Any:
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    async with (
        create_mcp_http_client(headers=headers) as client,
        streamable_http_client(url, http_client=client) as streams,
    ):
        yield streams


async def _list_tools(session: Any) -> list[Any]:
    from mcp.types import PaginatedRequestParams

    found: list[Any] = []
    cursor: str | None = None
    for _ in range(100):  # a server that pages forever is cut off
        page = await session.list_tools(
            params=PaginatedRequestParams(cursor=cursor) if cursor else None
        )
        found.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return found


def _quiet_sdk_logging() -> None:
    """The SDK logs tracebacks for a server's bad output; ketch reports failures itself."""
    for name in ("mcp", "httpx2"):
        logger = logging.getLogger(name)
        if not logger.handlers:
            logger.addHandler(logging.NullHandler())
            logger.propagate = False
