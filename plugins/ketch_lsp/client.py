"""One language server process, spoken to through pygls's client and lsprotocol's types.

Everything here runs on the LSP thread's event loop (:mod:`ketch_lsp.runtime`), which
is also where pygls and lsprotocol are imported (lsprotocol's types take most of a
second to import: never on the thread a frontend draws from). The
server is one process (its own process group; inside bwrap where the sandbox is in
force); its stderr is drained into a short tail for error messages; every request has
a deadline. What the server asks of ketch is answered without effect: settings from
its spec, registrations noted (pull diagnostics), and ``workspace/applyEdit`` refused
(a server never edits files: ketch applies a rename itself, through the policy).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ketch_lsp.positions import uri_of
from ketch_lsp.servers import ServerSpec

if TYPE_CHECKING:  # pragma: no cover
    from lsprotocol import types as T

    from ketch_lsp.protocol import Client

R = TypeVar("R")

STDERR_LINES = 20
MAX_PUBLISHED = 2000  # diagnostics kept per document (a flood is cut here)
SETTLE = 0.2  # seconds without a newer publish before pushed diagnostics count as final
STOP_GRACE = 2.0

IDLE, STARTING, READY, FAILED, STOPPED = "idle", "starting", "ready", "failed", "stopped"


def quiet_pygls() -> None:
    """pygls logs every notification it does not handle: not on ketch's screen."""
    for name in ("pygls", "lsprotocol"):
        logger = logging.getLogger(name)
        if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
            logger.addHandler(logging.NullHandler())
        logger.propagate = False


class ServerGone(Exception):
    """The server is not running (it crashed, did not start, or was stopped)."""


@dataclass
class Doc:
    version: int
    text: str
    result_id: str | None = None  # the last pulled diagnostics report's id


@dataclass
class Published:
    version: int | None
    diagnostics: list[T.Diagnostic]
    seq: int
    total: int  # as sent (a flood is cut to MAX_PUBLISHED)
    at: float = field(default_factory=time.monotonic)


class Server:
    """One running (or stopped) server for one project root. Its methods run on the LSP
    thread; ``state``, ``last_error`` and the counters are read from any thread."""

    def __init__(self, spec: ServerSpec, root: Path, workspace: Path) -> None:
        self.spec = spec
        self.root = root
        self.workspace = workspace
        self.state = IDLE
        self.starts = 0
        self.last_error = ""
        self.pid: int | None = None
        self.client: Client | None = None
        self.capabilities: T.ServerCapabilities | None = None
        self.pull = False
        self.pull_identifier: str | None = None
        self.docs: dict[str, Doc] = {}
        self.published: dict[str, Published] = {}
        self.flooded: dict[str, int] = {}  # uri -> diagnostics sent beyond what is kept
        # uri -> (text, diagnostics) as last seen by ketch: the baseline of the next check
        self.last: dict[str, tuple[str, list[T.Diagnostic]]] = {}
        self.seq = 0
        self.changed = asyncio.Event()
        self.stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self.started_at = 0.0
        self.ready_in = 0.0
        self.starting: asyncio.Task[None] | None = None
        self.release: Callable[[], None] = lambda: None  # frees what the sandbox holds
        self.stopping = False
        self.timeouts = 0
        self.drain: asyncio.Future[None] | None = None

    # --- what the server tells us ----------------------------------------------------

    def on_published(self, params: T.PublishDiagnosticsParams) -> None:
        self.seq += 1
        items = list(params.diagnostics)
        if len(items) > MAX_PUBLISHED:
            self.flooded[params.uri] = len(items)
        self.published[params.uri] = Published(
            params.version, items[:MAX_PUBLISHED], self.seq, len(items)
        )
        self.changed.set()

    def on_exit(self, code: int | None) -> None:
        if self.stopping:
            self.state = STOPPED
            return
        if self.state == FAILED:  # ended because it failed (a missed deadline): keep why
            return
        tail = self.stderr_tail()
        why = f"exited with code {code}" if code is not None and code >= 0 else "was killed"
        if code is not None and code < 0:
            why = f"was killed by signal {-code}"
        self.fail(why + (f" ({tail})" if tail else ""))

    def note_error(self, message: str) -> None:
        self.last_error = " ".join(message.split())[:300]

    def fail(self, why: str) -> None:
        self.state = FAILED
        self.last_error = why
        self.changed.set()

    def stderr_tail(self) -> str:
        lines = [line for line in self.stderr if line.strip()]
        return lines[-1][:300] if lines else ""

    # --- starting and stopping ------------------------------------------------------------

    async def start(
        self, argv: list[str], env: dict[str, str], timeout: float, *, sandboxed: bool = False
    ) -> None:
        """Start the process and initialize it, within ``timeout`` seconds. In the
        sandbox's pid namespace ketch's pid means nothing (a server that watches it
        would exit at once): it is not given, bwrap's --die-with-parent does that job."""
        self.state = STARTING
        self.starts += 1
        self.started_at = time.monotonic()
        self.pull, self.pull_identifier = False, None
        self.docs.clear()
        self.published.clear()
        self.last.clear()
        self.stopping = False
        from ketch_lsp.protocol import Client, preexec

        client = Client(self)
        self.client = client
        try:
            await client.start_io(
                argv[0],
                *argv[1:],
                cwd=str(self.root),
                env=env,
                start_new_session=True,
                preexec_fn=preexec,
            )
        except OSError as exc:
            self.fail(f"could not start {argv[0]}: {exc.strerror or exc}")
            return
        process = client._server
        self.pid = process.pid if process is not None else None
        if process is not None and process.stderr is not None:
            self.drain = asyncio.ensure_future(self._drain(process.stderr))
        try:
            result = await asyncio.wait_for(
                client.initialize_async(self._initialize_params(sandboxed)), timeout
            )
        except TimeoutError:
            self.fail(f"did not answer initialize within {timeout:g} s")
            await self.kill()
            return
        except Exception as exc:  # noqa: BLE001 - a server's failure is its own
            if self.state != FAILED:
                tail = self.stderr_tail()
                self.fail(
                    f"failed to initialize: {_describe(exc)}" + (f" ({tail})" if tail else "")
                )
            await self.kill()
            return
        if self.state == FAILED:  # it died while answering
            return
        from lsprotocol import types as T

        self.capabilities = result.capabilities
        if result.capabilities.diagnostic_provider is not None:
            provider = result.capabilities.diagnostic_provider
            self.pull = True
            self.pull_identifier = getattr(provider, "identifier", None)
        # Settings are answered when the server asks (workspace/configuration); pushing
        # them too would make some servers (pyright) start their analysis over.
        client.initialized(T.InitializedParams())
        self.ready_in = time.monotonic() - self.started_at
        self.state = READY

    def _initialize_params(self, sandboxed: bool) -> T.InitializeParams:
        from lsprotocol import types as T

        root = uri_of(self.root)
        return T.InitializeParams(
            process_id=None if sandboxed else os.getpid(),
            root_uri=root,
            root_path=str(self.root),
            client_info=T.ClientInfo(name="ketch"),
            initialization_options=self.spec.initialization_options or None,
            workspace_folders=[T.WorkspaceFolder(uri=root, name=self.root.name or "/")],
            capabilities=T.ClientCapabilities(
                general=T.GeneralClientCapabilities(
                    position_encodings=[T.PositionEncodingKind.Utf16]
                ),
                workspace=T.WorkspaceClientCapabilities(
                    configuration=True,
                    workspace_folders=True,
                    did_change_watched_files=T.DidChangeWatchedFilesClientCapabilities(
                        dynamic_registration=False
                    ),
                    symbol=T.WorkspaceSymbolClientCapabilities(),
                    diagnostics=T.DiagnosticWorkspaceClientCapabilities(refresh_support=False),
                ),
                text_document=T.TextDocumentClientCapabilities(
                    synchronization=T.TextDocumentSyncClientCapabilities(did_save=True),
                    publish_diagnostics=T.PublishDiagnosticsClientCapabilities(
                        version_support=True
                    ),
                    diagnostic=T.DiagnosticClientCapabilities(dynamic_registration=True),
                    definition=T.DefinitionClientCapabilities(link_support=False),
                    references=T.ReferenceClientCapabilities(),
                    hover=T.HoverClientCapabilities(
                        content_format=[T.MarkupKind.PlainText, T.MarkupKind.Markdown]
                    ),
                    document_symbol=T.DocumentSymbolClientCapabilities(
                        hierarchical_document_symbol_support=True
                    ),
                    rename=T.RenameClientCapabilities(prepare_support=False),
                ),
                window=T.WindowClientCapabilities(work_done_progress=False),
            ),
        )

    async def _drain(self, stream: asyncio.StreamReader) -> None:
        with contextlib.suppress(Exception):
            while True:
                line = await stream.readline()
                if not line:
                    return
                self.stderr.append(line.decode("utf-8", "replace").rstrip())

    async def stop(self) -> None:
        """Shut down politely (shutdown, exit), then end the process group."""
        client = self.client
        if client is None:
            self.state = STOPPED
            return
        self.stopping = True
        if self.state == READY and not client.stopped:
            from lsprotocol import types as T  # noqa: F401 - loaded already: it started

            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.shutdown_async(None), STOP_GRACE)
                client.exit(None)
        await self.kill()
        self.state = STOPPED

    async def kill(self) -> None:
        """End the server's process group (SIGTERM, then SIGKILL after a grace)."""
        client = self.client
        process = client._server if client is not None else None
        if process is not None and process.returncode is None:
            _signal_group(process.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), STOP_GRACE)
            except TimeoutError:
                _signal_group(process.pid, signal.SIGKILL)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(process.wait(), STOP_GRACE)
        if process is not None:
            _signal_group(process.pid, signal.SIGKILL)  # what it left in its group
            transport = getattr(process, "_transport", None)
            if transport is not None:
                transport.close()  # its pipes now, not when the loop is gone
        if self.drain is not None:
            self.drain.cancel()
        if client is not None:
            client._stop_event.set()
            for task in client._async_tasks:
                task.cancel()
        self.release()
        self.release = lambda: None

    # --- talking to it ---------------------------------------------------------------------

    def live_client(self) -> Client:
        if self.state != READY or self.client is None or self.client.stopped:
            raise ServerGone(self.last_error or f"the server is {self.state}")
        return self.client

    async def request(self, call: Callable[[Client], Awaitable[R]], timeout: float) -> R:
        """One request with a deadline. A server that misses two deadlines in a row is
        taken as hung: it is ended (and started again on next use, within the limit)."""
        client = self.live_client()
        try:
            result = await asyncio.wait_for(call(client), timeout)
        except TimeoutError:
            self.timeouts += 1
            if self.timeouts >= 2:
                self.fail(f"did not answer {self.timeouts} requests in a row within {timeout:g} s")
                await self.kill()
            raise
        self.timeouts = 0
        return result

    def sync(self, path: Path, text: str) -> Doc:
        """Make the server's copy of ``path`` be ``text`` (open or change; whole text)."""
        from lsprotocol import types as T

        client = self.live_client()
        uri = uri_of(path)
        doc = self.docs.get(uri)
        if doc is None:
            doc = Doc(1, text)
            self.docs[uri] = doc
            client.text_document_did_open(
                T.DidOpenTextDocumentParams(
                    T.TextDocumentItem(
                        uri=uri, language_id=self.spec.language_of(path), version=1, text=text
                    )
                )
            )
            return doc
        if doc.text == text:
            return doc
        doc.version += 1
        doc.text = text
        client.text_document_did_change(
            T.DidChangeTextDocumentParams(
                T.VersionedTextDocumentIdentifier(version=doc.version, uri=uri),
                [T.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        if self._wants_save():
            client.text_document_did_save(
                T.DidSaveTextDocumentParams(T.TextDocumentIdentifier(uri), text=None)
            )
        return doc

    def _wants_save(self) -> bool:
        sync = self.capabilities.text_document_sync if self.capabilities else None
        return bool(getattr(sync, "save", None))

    def watched(self, changes: list[tuple[Path, int]]) -> None:
        """Files changed on disk that the server does not have open."""
        if not changes or self.state != READY or self.client is None:
            return
        from lsprotocol import types as T

        events = [T.FileEvent(uri=uri_of(p), type=T.FileChangeType(kind)) for p, kind in changes]
        with contextlib.suppress(Exception):
            self.client.workspace_did_change_watched_files(
                T.DidChangeWatchedFilesParams(changes=events)
            )

    async def diagnostics(
        self, path: Path, doc: Doc, since: int, deadline: float
    ) -> list[T.Diagnostic]:
        """The diagnostics of ``doc`` as it is now: pulled where the server offers that,
        else the last publication for its version (after a short settle)."""
        uri = uri_of(path)
        if self.pull:
            return await self._pull(path, doc, deadline)
        while True:
            entry = self.published.get(uri)
            fresh = (
                entry is not None
                and entry.seq > since
                and (entry.version is None or entry.version >= doc.version)
            )
            now = time.monotonic()
            if fresh and entry is not None and now - entry.at >= SETTLE:
                return list(entry.diagnostics)
            if now >= deadline:
                if fresh and entry is not None:
                    return list(entry.diagnostics)
                raise TimeoutError
            if self.state != READY:
                raise ServerGone(self.last_error or f"the server is {self.state}")
            if self.pull:  # it registered pull diagnostics meanwhile
                return await self._pull(path, doc, deadline)
            self.changed.clear()
            wait = min(deadline - now, SETTLE if fresh else deadline - now)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.changed.wait(), max(0.01, wait))

    async def _pull(self, path: Path, doc: Doc, deadline: float) -> list[T.Diagnostic]:
        from lsprotocol import types as T

        uri = uri_of(path)
        remaining = max(0.05, deadline - time.monotonic())
        identifier = self.pull_identifier
        report = await self.request(
            lambda c: c.text_document_diagnostic_async(
                T.DocumentDiagnosticParams(
                    T.TextDocumentIdentifier(uri),
                    identifier=identifier,
                    previous_result_id=doc.result_id,
                )
            ),
            remaining,
        )
        items = getattr(report, "items", None)
        if items is None:  # unchanged since the last report
            known = self.published.get(uri)
            return list(known.diagnostics) if known else []
        doc.result_id = getattr(report, "result_id", None)
        items = list(items)
        self.published[uri] = Published(doc.version, items[:MAX_PUBLISHED], self.seq, len(items))
        if len(items) > MAX_PUBLISHED:
            self.flooded[uri] = len(items)
        return items[:MAX_PUBLISHED]


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    name = type(exc).__name__
    return f"{name}: {text}" if text else name
