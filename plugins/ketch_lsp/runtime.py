"""The servers of a workspace, on one background thread with its own event loop.

pygls's client belongs to the loop that started it, while ketch calls from whatever
loop a frontend runs (a headless turn's, the shell's) and, for a rename's plan, from
synchronous code. So every server of a kernel lives on one dedicated thread, started
with the first server; callers cross over with ``run_coroutine_threadsafe`` and wait
with a deadline (a deadline passed never cancels a server's start: the next call finds
it ready).

A :class:`Manager` per workspace holds one :class:`~ketch_lsp.client.Server` per
(server, project root), started lazily on the first file of its language, started
again after a crash or a hang at most ``max_restarts`` times, and stopped when the last
session using it ends. Failures are kept (``/lsp`` shows them) and told once.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import os
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ketch.api import StashKey
from ketch_lsp.servers import ServerSpec, for_file, project_root, resolve
from ketch_lsp.settings import LspSettings

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, Session
    from ketch_lsp.client import Server

R = TypeVar("R")

STOP_ALL = 6.0  # seconds the end of a session waits for its servers to stop
MAX_OPEN = 200  # documents one server keeps open


class LspThread:
    """One thread, one event loop, for every server of a kernel."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="ketch-lsp", daemon=True)
        self.thread.start()
        self.closed = False
        atexit.register(self.close)

    def submit(self, coro: Coroutine[Any, Any, R]) -> concurrent.futures.Future[R]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    async def run(self, coro: Coroutine[Any, Any, R], timeout: float) -> R:
        """Await ``coro`` on the LSP thread from another loop, at most ``timeout`` s."""
        future = self.submit(coro)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except (TimeoutError, asyncio.CancelledError):
            future.cancel()
            raise

    def call(self, coro: Coroutine[Any, Any, R], timeout: float) -> R:
        """Run ``coro`` on the LSP thread and wait for it here (synchronous callers)."""
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError from None

    def close(self) -> None:
        """Cancel what is left on the loop and stop it (ketch exits: servers still
        running die with bwrap or with ketch itself)."""
        if self.closed:
            return
        self.closed = True

        async def cancel() -> None:
            current = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not current]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(cancel(), self.loop).result(2.0)
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(2.0)


THREAD = StashKey[LspThread]()
MANAGERS = StashKey[dict[str, "Manager"]]()


def lsp_thread(kernel: Kernel) -> LspThread:
    thread = kernel.stash.get(THREAD)
    if thread is None or thread.closed:
        from ketch_lsp.client import quiet_pygls

        quiet_pygls()
        thread = LspThread()
        kernel.stash[THREAD] = thread
    return thread


@dataclass
class Told:
    """What was said once already: per server, per kind of message."""

    said: set[str] = field(default_factory=set)

    def once(self, key: str) -> bool:
        if key in self.said:
            return False
        self.said.add(key)
        return True


class Manager:
    """The servers of one workspace (shared by the sessions of a kernel there)."""

    def __init__(self, kernel: Kernel, workspace: Path) -> None:
        self.kernel = kernel
        self.workspace = workspace
        self.settings = kernel.settings.of(LspSettings)
        self.specs: list[ServerSpec] = resolve(kernel)
        self.servers: dict[tuple[str, str], Server] = {}
        self.told = Told()
        self.off: dict[str, str] = {}  # server name -> why it does not start here
        self.pending: list[str] = []  # notices to emit on the next chance (main thread)

    @property
    def thread(self) -> LspThread:
        return lsp_thread(self.kernel)

    # --- which server, allowed or not -------------------------------------------------------

    def specs_for(self, path: Path) -> list[ServerSpec]:
        return [spec for spec in for_file(self.specs, path) if self.allowed(spec)]

    def serves(self, path: Path) -> bool:
        return bool(for_file(self.specs, path))

    def allowed(self, spec: ServerSpec, session: Session | None = None) -> bool:
        """A workspace's server only while pinned, checked as it starts (said once)."""
        if spec.name in self.off:
            return False
        if spec.item is None:
            return True
        from ketch_lsp.servers import fresh_item
        from ketch_trust_kit import check

        item = fresh_item(self.kernel, spec) or spec.item
        return check(self.kernel, item, session=session, held="not started")

    def server(self, spec: ServerSpec, path: Path) -> Server:
        from ketch_lsp.client import Server

        root = project_root(path, spec.root_markers, self.workspace)
        key = (spec.name, str(root))
        found = self.servers.get(key)
        if found is None:
            found = Server(spec, root, self.workspace)
            self.servers[key] = found
        return found

    # --- starting (main thread: the sandbox hook is called here) ---------------------------

    def launch(self, server: Server, session: Session | None) -> bool:
        """Start ``server`` in the background if it is not running and may start; False
        when it will not run (off, held, or failed too often)."""
        from ketch_lsp.client import FAILED, IDLE, READY, STARTING, STOPPED

        if server.state in (READY, STARTING):
            return True
        if server.state == FAILED and server.starts > self.settings.max_restarts:
            return False
        if server.state not in (IDLE, FAILED, STOPPED):
            return False
        spec = server.spec
        if not self.allowed(spec, session) or spec.argv is None:
            return False
        prepared = self._argv(spec, server)
        if prepared is None:
            return False
        argv, env, sandboxed = prepared
        server.state = STARTING
        self.thread.submit(self._start(server, argv, env, sandboxed))
        return True

    async def _start(
        self, server: Server, argv: list[str], env: dict[str, str], sandboxed: bool
    ) -> None:
        server.starting = asyncio.current_task()
        await server.start(argv, env, self.settings.start_timeout, sandboxed=sandboxed)
        if server.state != "ready":
            from ketch_lsp.client import FAILED

            server.state = FAILED

    def _argv(
        self, spec: ServerSpec, server: Server
    ) -> tuple[list[str], dict[str, str], bool] | None:
        """The command line to start (wrapped by the sandbox where one is in force) and
        the environment (ketch's own minus its secrets); None when it must not start."""
        from ketch_process_kit.childenv import child_environment

        argv = list(spec.argv or ())
        env = child_environment(os.environ, extra=spec.env)
        reporters: list[Callable[[bool], str | None]] = []
        from ketch_tool_kit.sandbox import wrapper

        try:
            wrapped = wrapper(self.kernel)(
                argv, self.workspace, False, exposed=None, reporters=reporters
            )
        except Exception as exc:  # noqa: BLE001 - a failing sandbox means "not run"
            for reporter in reporters:
                reporter(True)
            why = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            self._off(spec, f"the sandbox failed ({why}), so it is not started")
            return None
        if not wrapped:
            if not self.settings.unsandboxed:
                self._off(
                    spec,
                    "no sandbox is in force here, and a language server can run a project's "
                    "code (its interpreter, build scripts), so it is not started; "
                    "[lsp] unsandboxed = true in your config starts servers anyway",
                )
                return None
            server.release = lambda: None
            return argv, env, False

        def release() -> None:
            for reporter in reporters:
                with contextlib.suppress(Exception):
                    reporter(True)

        server.release = release
        return list(wrapped), env, True

    def _off(self, spec: ServerSpec, why: str) -> None:
        self.off[spec.name] = why
        if self.told.once(f"off:{spec.name}"):
            self.pending.append(f"language server {spec.name}: {why}")

    # --- failures, told once ---------------------------------------------------------------------

    def failures(self) -> list[str]:
        """New failures to tell the person (each server's first failure, once)."""
        from ketch_lsp.client import FAILED

        out = list(self.pending)
        self.pending.clear()
        for server in self.servers.values():
            if server.state == FAILED and self.told.once(
                f"failed:{server.spec.name}:{server.root}"
            ):
                limit = self.settings.max_restarts
                out.append(
                    f"language server {server.spec.name} {server.last_error}; "
                    + (
                        f"it is started again on next use, at most {limit} time{'s' if limit != 1 else ''} (/lsp shows it)"
                        if limit
                        else "it stays off for this session (/lsp shows it)"
                    )
                )
            if server.spec.name and server.flooded and self.told.once(f"flood:{server.spec.name}"):
                from ketch_lsp.client import MAX_PUBLISHED

                count = next(iter(server.flooded.values()))
                out.append(
                    f"language server {server.spec.name} sent {count} diagnostics for one file; "
                    f"ketch keeps the first {MAX_PUBLISHED} "
                    f"and shows at most {self.settings.max_diagnostics} per result"
                )
        return out

    def tell(self, session: Session) -> None:
        """Emit what went wrong since last told (main thread)."""
        from ketch.api import NoticeEvent

        for message in self.failures():
            self.kernel.emit(session, NoticeEvent(level="warning", message=message))

    # --- waiting for a server (LSP thread) ----------------------------------------------------------

    async def ready(self, server: Server, deadline: float) -> bool:
        """Wait until ``server`` is ready or ``deadline`` (monotonic) passes."""
        from ketch_lsp.client import READY, STARTING

        while server.state == STARTING and time.monotonic() < deadline:
            task = server.starting
            remaining = deadline - time.monotonic()
            if task is None or task.done():
                await asyncio.sleep(min(0.02, max(0.0, remaining)))
                continue
            with contextlib.suppress(asyncio.TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(task), max(0.0, remaining))
        return server.state == READY

    # --- ending --------------------------------------------------------------------------------

    def stop_all(self) -> None:
        servers = list(self.servers.values())
        if not servers or self.kernel.stash.get(THREAD) is None:
            return

        async def stop() -> None:
            await asyncio.gather(*(s.stop() for s in servers), return_exceptions=True)

        with contextlib.suppress(Exception):
            self.thread.call(stop(), STOP_ALL)


def manager(kernel: Kernel, workspace: Path | None = None) -> Manager:
    """The manager of ``workspace`` (the kernel's by default), made on first use."""
    root = Path(workspace or kernel.workspace)
    table = kernel.stash.setdefault(MANAGERS, {})
    found = table.get(str(root))
    if found is None:
        found = Manager(kernel, root)
        table[str(root)] = found
    return found


def existing(kernel: Kernel, workspace: Path) -> Manager | None:
    return kernel.stash.get(MANAGERS, {}).get(str(workspace))


def end_session(session: Session) -> None:
    """The session ended: stop its workspace's servers when no other live session of
    this kernel works there."""
    from ketch_lsp.sessions import LIVE

    found = existing(session.kernel, Path(session.workspace))
    if found is None:
        return
    others = [
        s
        for s in session.kernel.stash.get(LIVE, {}).values()
        if s.id != session.id and Path(s.workspace) == found.workspace
    ]
    if not others:
        found.stop_all()
        found.servers.clear()
