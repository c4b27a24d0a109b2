"""The ACP agent: what each method the editor calls does in ketch.

A plain class (not a subclass of ``acp.Agent``): a method it does not define is
answered "method not found", as the protocol wants, instead of a silent success.
Errors reach the editor as JSON-RPC errors carrying ketch's own one-line message.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from ketch.api import KetchError
from ketch_acp.booting import boot_session_kernel
from ketch_acp.files import EditorFiles
from ketch_acp.live import LiveSession
from ketch_acp.modes import MODES, PROFILES, config_options, mode_state
from ketch_acp.prompts import prompt_parts
from ketch_acp.replay import replay

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel

log = logging.getLogger("ketch.acp")
T = TypeVar("T")


def _error(exc: KetchError) -> RequestError:
    return RequestError(-32603, exc.message)


async def _ketch(call: Callable[[], Awaitable[T]]) -> T:
    try:
        return await call()
    except KetchError as exc:
        raise _error(exc) from None


class KetchAgent:
    def __init__(self, kernel: Kernel) -> None:
        self.base = kernel
        self.conn: Any = None
        self.client_fs = (False, False)  # (read, write)
        self.sessions: dict[str, LiveSession] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # --- initialize ------------------------------------------------------------------

    def _has_hook(self, name: str) -> bool:
        return bool(getattr(self.base.pm.hook, name).get_hookimpls())

    def _mcp_http(self) -> bool:
        """Whether an MCP plugin here runs servers over HTTP (``mcp_transports``)."""
        return any("http" in found for found in self.base.hooks.values("mcp_transports"))

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        from ketch.api import __version__

        fs = getattr(client_capabilities, "fs", None)
        self.client_fs = (
            bool(getattr(fs, "read_text_file", False)),
            bool(getattr(fs, "write_text_file", False)),
        )
        can_store = self._has_hook("ketch_open_store")
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=can_store,
                prompt_capabilities=PromptCapabilities(
                    image=True, audio=False, embedded_context=True
                ),
                mcp_capabilities=McpCapabilities(http=self._mcp_http(), sse=False),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities() if can_store else None
                ),
            ),
            agent_info=Implementation(name="ketch", title="ketch", version=__version__),
            auth_methods=[],
        )

    # --- sessions --------------------------------------------------------------------

    async def _open(
        self, cwd: str, mcp_servers: list[Any] | None, resume: str | None
    ) -> LiveSession:
        kernel, notes = await asyncio.to_thread(
            boot_session_kernel, self.base, cwd, mcp_servers or []
        )
        kernel.notices.extend(notes)
        # Validating settings, registering tools (starting MCP servers) and building the
        # provider may block: off the loop, so the editor's other requests still flow.
        await asyncio.to_thread(kernel.configure)
        live = LiveSession(kernel=kernel, conn=self.conn)
        live.start_sender()
        # Building the session opens the store and may read the keyring: off the loop too.
        try:
            if resume is None:
                session = await asyncio.to_thread(kernel.new_session, listeners=[live.on_event])
            else:
                session = await asyncio.to_thread(
                    kernel.resume_session, resume, listeners=[live.on_event]
                )
        except BaseException:
            live.sender.cancel()  # type: ignore[union-attr]
            raise
        live.session, live.mode = session, session.mode
        read, write = self.client_fs
        if read or write:
            from ketch_tool_kit import files

            files.attach(
                session.id,
                EditorFiles(
                    self.conn, session.id, asyncio.get_running_loop(), read=read, write=write
                ),
            )
        self.sessions[session.id] = live
        return live

    def _live(self, session_id: str) -> LiveSession:
        live = self.sessions.get(session_id)
        if live is None:
            raise RequestError(
                -32002,
                f"no session '{session_id}' is open in this ketch process; load it with session/load",
                {"sessionId": session_id},
            )
        return live

    async def new_session(
        self,
        cwd: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        live = await _ketch(lambda: self._open(cwd, mcp_servers, None))
        assert live.session is not None
        live.send(live.commands_update())
        # The editor learns the session id from this response: updates follow it.
        asyncio.get_running_loop().call_soon(live.gate.set)
        return NewSessionResponse(
            session_id=live.id,
            modes=mode_state(live.session.mode),
            config_options=config_options(live.session.mode, live.session.profile),  # type: ignore[arg-type]
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        previous = self.sessions.pop(session_id, None)
        if previous is not None:
            await previous.close()

        async def load() -> LiveSession:
            try:
                return await self._open(cwd, mcp_servers, session_id)
            except KetchError as exc:
                if exc.message.startswith("no session") or "no earlier session" in exc.message:
                    raise RequestError(-32002, exc.message, {"sessionId": session_id}) from None
                raise

        live = await _ketch(load)
        assert live.session is not None
        live.gate.set()
        for update in replay(live.session.transcript, live.workspace, live.kernel.tools):
            live.send(update)
        live.send(live.commands_update())
        await live.flush()
        return LoadSessionResponse(
            modes=mode_state(live.session.mode),
            config_options=config_options(live.session.mode, live.session.profile),  # type: ignore[arg-type]
        )

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        def listing() -> list[Any]:
            store = self.base.store
            if store is None:
                raise KetchError("no session store is loaded (is the 'store' plugin disabled?)")
            return list(store.list_sessions(cwd))

        try:
            found = await asyncio.to_thread(listing)
        except KetchError as exc:
            raise _error(exc) from None
        sessions = [
            SessionInfo(
                session_id=item.id,
                cwd=item.workspace or cwd or "",
                title=item.name or item.title or None,
                updated_at=datetime.fromtimestamp(item.updated, UTC).isoformat()
                if item.updated
                else None,
            )
            for item in found
            if item.workspace or cwd
        ]
        return ListSessionsResponse(sessions=sessions)

    # --- modes and options -------------------------------------------------------------

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        live = self._live(session_id)
        if mode_id not in MODES:
            raise RequestError(
                -32602,
                f"unknown mode {mode_id!r}; ketch's modes are: {', '.join(MODES)}",
                {"modeId": mode_id},
            )
        assert live.session is not None
        live.session.set_mode(mode_id)  # type: ignore[arg-type]
        await live.flush()
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        live = self._live(session_id)
        session = live.session
        assert session is not None
        choices = {"mode": MODES, "profile": PROFILES}.get(config_id)
        if choices is None:
            raise RequestError(
                -32602,
                f"unknown config option {config_id!r}; ketch has: mode, profile",
                {"configId": config_id},
            )
        if value not in choices:
            raise RequestError(
                -32602,
                f"{config_id} cannot be {value!r}; choose one of: {', '.join(choices)}",
                {"configId": config_id},
            )
        if config_id == "mode":
            session.set_mode(value)  # type: ignore[arg-type]
        else:
            session.set_profile(value)  # type: ignore[arg-type]
        await live.flush()
        return SetSessionConfigOptionResponse(
            config_options=config_options(session.mode, session.profile)
        )  # type: ignore[arg-type]

    # --- prompts -----------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        live = self._live(session_id)
        text, images = prompt_parts(prompt)
        reason = await _ketch(lambda: live.prompt(text, images))
        return PromptResponse(stop_reason=reason)  # type: ignore[arg-type]

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        live = self.sessions.get(session_id)
        if live is not None:
            live.cancel()

    def disconnected(self) -> None:
        """The editor closed the connection: every running turn stops now (its prompt
        answers ``cancelled`` if anyone still listens)."""
        for live in self.sessions.values():
            live.cancel()

    async def shutdown(self) -> None:
        """The editor went away: end every session (each is saved, as at any exit)."""
        sessions, self.sessions = list(self.sessions.values()), {}
        for live in sessions:
            try:
                await live.close()
            except Exception:  # noqa: BLE001
                log.exception("closing a session")
