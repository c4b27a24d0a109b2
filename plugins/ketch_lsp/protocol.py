"""pygls's client, answering what a server asks of ketch (imported on the LSP thread)."""

from __future__ import annotations

import asyncio
import signal
from typing import TYPE_CHECKING, Any

from lsprotocol import types as T
from pygls.lsp.client import LanguageClient

from ketch_lsp.positions import uri_of

if TYPE_CHECKING:  # pragma: no cover
    from ketch_lsp.client import Server


def _section(settings: dict[str, Any], section: str | None) -> Any:
    if not section:
        return settings
    node: Any = settings
    for part in section.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def preexec() -> None:  # pragma: no cover - runs in the child
    """Die with ketch (outside the sandbox; bwrap has --die-with-parent)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001, S110 - best effort: stdin's end stops servers too
        pass


class Client(LanguageClient):
    def __init__(self, server: Server) -> None:
        super().__init__("ketch", "1")
        self.server = server
        self._register()

    def _register(self) -> None:
        server = self.server

        @self.feature(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _published(params: T.PublishDiagnosticsParams) -> None:
            server.on_published(params)

        @self.feature(T.WORKSPACE_CONFIGURATION)
        def _configuration(params: T.ConfigurationParams) -> list[Any]:
            return [_section(server.spec.settings, item.section) for item in params.items]

        @self.feature(T.CLIENT_REGISTER_CAPABILITY)
        def _register(params: T.RegistrationParams) -> None:
            for registration in params.registrations:
                if registration.method == T.TEXT_DOCUMENT_DIAGNOSTIC:
                    options = registration.register_options
                    identifier = getattr(options, "identifier", None)
                    if isinstance(options, dict):
                        identifier = options.get("identifier")
                    server.pull = True
                    server.pull_identifier = identifier
                    server.changed.set()  # a wait for pushed diagnostics pulls now

        @self.feature(T.CLIENT_UNREGISTER_CAPABILITY)
        def _unregister(params: T.UnregistrationParams) -> None:
            return None

        @self.feature(T.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def _progress(params: Any) -> None:
            return None

        for method in (
            T.WORKSPACE_DIAGNOSTIC_REFRESH,
            T.WORKSPACE_SEMANTIC_TOKENS_REFRESH,
            T.WORKSPACE_INLAY_HINT_REFRESH,
            T.WORKSPACE_INLINE_VALUE_REFRESH,
            T.WORKSPACE_CODE_LENS_REFRESH,
            T.WORKSPACE_FOLDING_RANGE_REFRESH,
            T.WINDOW_SHOW_MESSAGE_REQUEST,
        ):
            self.feature(method)(lambda _params: None)

        @self.feature(T.WORKSPACE_APPLY_EDIT)
        def _apply(params: T.ApplyWorkspaceEditParams) -> T.ApplyWorkspaceEditResult:
            return T.ApplyWorkspaceEditResult(
                applied=False,
                failure_reason="ketch applies edits itself, through its permission checks",
            )

        @self.feature(T.WINDOW_SHOW_DOCUMENT)
        def _show(params: T.ShowDocumentParams) -> T.ShowDocumentResult:
            return T.ShowDocumentResult(success=False)

        @self.feature(T.WORKSPACE_WORKSPACE_FOLDERS)
        def _folders(params: Any) -> list[T.WorkspaceFolder]:
            return [T.WorkspaceFolder(uri=uri_of(server.root), name=server.root.name or "/")]

        @self.feature(T.WINDOW_SHOW_MESSAGE)
        def _message(params: T.ShowMessageParams) -> None:
            if params.type == T.MessageType.Error:
                server.note_error(params.message)

        @self.feature(T.WINDOW_LOG_MESSAGE)
        def _log(params: T.LogMessageParams) -> None:
            if params.type in (T.MessageType.Error, T.MessageType.Warning):
                server.stderr.append(" ".join(str(params.message).split())[:300])

        for method in (T.PROGRESS, T.TELEMETRY_EVENT):
            self.feature(method)(lambda _params: None)

    async def server_exit(self, process: asyncio.subprocess.Process) -> None:
        self.server.on_exit(process.returncode)

    def report_server_error(self, error: Exception, source: Any) -> None:
        self.server.note_error(f"unreadable message from the server ({type(error).__name__})")
