"""Inside a background run's worker: the session as people attached to it see it.

:class:`Live` is made when the run's root session starts. It serves the worker's unix
socket (a thread per connection), keeps the approvals the session waits for, tees
every event of the session to attached clients, keeps the run's status file current
(state, approvals waited for, cost so far), and tells the supervisor — through the
handshake pipe — that the session started.

**Approvals wait for a person.** :meth:`Live.approve` is the run's approver (through
the headless plugin's ``headless_approver`` hook): it shows the question to everyone
attached (and to whoever attaches later), marks the run ``waiting``, and waits —
without a timeout — for an attached person's answer. Nothing answers by itself: no
time limit allows, and a client that goes away answers nothing. ``ketch stop`` ends
the wait (the turn is cancelled).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import os
import queue
import signal
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ketch.api import StashKey
from ketch_background import registry
from ketch_background.protocol import MAX_LINE, decode, encode, peer_uid

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ApprovalAnswer, ApprovalRequest, Event, Session

LIVE = StashKey["Live"]()
ORIGIN = "person"  # an attached person answered (PermissionEvent.origin, docs/provenance.md)


@dataclass
class Pending:
    id: str
    request: ApprovalRequest
    future: concurrent.futures.Future[ApprovalAnswer] = field(
        default_factory=concurrent.futures.Future
    )

    def message(self) -> dict[str, Any]:
        request = self.request
        return {
            "type": "approval",
            "id": self.id,
            "tool": request.call.tool,
            "input": request.call.input,
            "summary": request.summary,
            "reason": request.reason,
            "scope": request.scope,
            "preview": request.preview,
            "agent": request.agent,
            "hard": request.hard,
        }


class Client:
    """One attached connection: what to send it, in order."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.outbox: queue.Queue[bytes | None] = queue.Queue()

    def send(self, message: dict[str, Any]) -> None:
        self.outbox.put(encode(message))

    def close(self) -> None:
        self.outbox.put(None)

    def pump(self) -> None:
        try:
            while (data := self.outbox.get()) is not None:
                self.conn.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                self.conn.shutdown(socket.SHUT_RDWR)


class Live:
    def __init__(self, session: Session, run: str, handshake_fd: int | None) -> None:
        self.session = session
        self.run = run
        self.handshake_fd = handshake_fd
        self.loop: asyncio.AbstractEventLoop | None = None
        self.lock = threading.RLock()
        self.clients: list[Client] = []
        self.pending: dict[str, Pending] = {}
        self.ids = itertools.count(1)
        self.partial = ""  # the answer streaming now (not in the transcript yet)
        self.cost = 0.0
        self.state = "running"
        self.ended: dict[str, Any] | None = None
        self.path = registry.socket_path(run)
        self.server: socket.socket | None = None
        self._last_write = 0.0

    # --- starting ----------------------------------------------------------------------

    def start(self) -> None:
        """Listen, record the session in the status, then tell the supervisor."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            server.bind(os.fspath(self.path))
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        server.listen(16)
        self.server = server
        threading.Thread(target=self._accept, name="ketch-background-accept", daemon=True).start()
        registry.update_status(
            self.run,
            session_id=self.session.id,
            worker_pid=os.getpid(),
            state="running",
            socket=os.fspath(self.path),
        )
        self._handshake({"session_id": self.session.id, "worker_pid": os.getpid()})

    def fail(self, why: str) -> None:
        """Tell the supervisor (and so the launcher) why the run did not start."""
        self._handshake({"error": why})

    def _handshake(self, message: dict[str, Any]) -> None:
        fd, self.handshake_fd = self.handshake_fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.write(fd, encode(message))
        with contextlib.suppress(OSError):
            os.close(fd)

    def close(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            with contextlib.suppress(OSError):
                server.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        with self.lock:
            clients, self.clients = list(self.clients), []
        for client in clients:
            client.close()

    # --- connections -----------------------------------------------------------------------

    def _accept(self) -> None:
        while self.server is not None:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            if peer_uid(conn) != os.getuid():
                conn.close()  # only the user's own processes
                continue
            threading.Thread(
                target=self._serve, args=(conn,), name="ketch-background-client", daemon=True
            ).start()

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        conn.settimeout(10)
        try:
            first = decode(reader.readline(MAX_LINE))
        except OSError:
            first = None
        conn.settimeout(None)
        op = (first or {}).get("op")
        if op == "status":
            with contextlib.suppress(OSError):
                conn.sendall(encode(self.status()))
            conn.close()
            return
        if op != "attach":
            conn.close()
            return
        client = Client(conn)
        with self.lock:
            client.send(self.hello())
            self.clients.append(client)
        threading.Thread(target=client.pump, name="ketch-background-send", daemon=True).start()
        try:
            for line in reader:
                message = decode(line)
                if message is not None:
                    self._received(message)
        except OSError:
            pass
        finally:
            with self.lock:
                if client in self.clients:
                    self.clients.remove(client)
            client.close()

    def _received(self, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == "answer":
            self._answered(message)
        elif op == "steer" and self.loop is not None:
            text = message.get("text")
            if isinstance(text, str) and text.strip():
                self.loop.call_soon_threadsafe(self.session.steer, text)

    def _answered(self, message: dict[str, Any]) -> None:
        from ketch.api import ApprovalAnswer

        with self.lock:
            pending = self.pending.get(str(message.get("id")))
        if pending is None or pending.future.done():
            return
        remember = "session" if message.get("remember") == "session" else "once"
        note = message.get("message")
        pending.future.set_result(
            ApprovalAnswer(
                approved=message.get("approved") is True,
                remember=remember,  # type: ignore[arg-type]
                message=note if isinstance(note, str) and note.strip() else None,
                origin=ORIGIN,
            )
        )

    def broadcast(self, message: dict[str, Any]) -> None:
        with self.lock:
            for client in self.clients:
                client.send(message)

    # --- what a client sees -------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        session = self.session
        with self.lock:
            waiting = [p.message() for p in self.pending.values()]
        return {
            "type": "status",
            "run": self.run,
            "session_id": session.id,
            "state": self.state,
            "workspace": str(session.workspace),
            "model": session.model,
            "provider": session.provider.name,
            "mode": session.mode,
            "profile": session.profile,
            "cost_usd": round(self.cost, 6),
            "waiting": [
                {"tool": w["tool"], "summary": w["summary"], "agent": w["agent"]} for w in waiting
            ],
        }

    def hello(self) -> dict[str, Any]:
        session = self.session
        return {
            **self.status(),
            "type": "hello",
            "history": [m.model_dump(mode="json") for m in session.transcript],
            "pending": [p.message() for p in self.pending.values()],
            "partial": self.partial,
            "ended": self.ended,
        }

    # --- the session's side ----------------------------------------------------------------------

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        """Wait for an attached person's answer (see the module's docstring)."""
        self.loop = asyncio.get_running_loop()
        pending = Pending(str(next(self.ids)), request)
        with self.lock:
            self.pending[pending.id] = pending
            for client in self.clients:
                client.send(pending.message())
        self._set_state("waiting")
        try:
            return await asyncio.wrap_future(pending.future)
        finally:
            with self.lock:
                self.pending.pop(pending.id, None)
                left = bool(self.pending)
            future = pending.future
            answer = future.result() if future.done() and not future.cancelled() else None
            self.broadcast(
                {
                    "type": "approval_closed",
                    "id": pending.id,
                    "approved": None if answer is None else answer.approved,
                }
            )
            if not left:
                self._set_state("running")

    def on_event(self, session: Session, event: Event) -> None:
        if self.loop is None:
            with contextlib.suppress(RuntimeError):
                self.loop = asyncio.get_running_loop()
                self._ignore_hangups(self.loop)
        kind = event.type
        if kind == "text_delta" and session is self.session:
            self.partial += getattr(event, "text", "")
        elif kind in ("message", "turn_end", "retry") and session is self.session:
            self.partial = ""
        if kind == "usage":
            cost = getattr(event, "cost_usd", None)
            if cost:
                self.cost += float(cost)
                self._write_status(force=False)
        self.broadcast({"type": "event", "event": event.model_dump(mode="json")})
        if kind == "turn_end" and session is self.session:
            self.ended = {"stop_reason": getattr(event, "stop_reason", "")}
            self.broadcast({"type": "end", **self.ended})

    @staticmethod
    def _ignore_hangups(loop: asyncio.AbstractEventLoop) -> None:
        """A background run outlives terminals: the turn's SIGHUP handler (which would
        cancel it) gives way to ignoring SIGHUP. SIGTERM and SIGINT still cancel."""
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(signal.SIGHUP)
            signal.signal(signal.SIGHUP, signal.SIG_IGN)

    def _set_state(self, state: str) -> None:
        self.state = state
        self._write_status(force=True)

    def _write_status(self, *, force: bool) -> None:
        now = time.monotonic()
        if not force and now - self._last_write < 0.5:
            return
        self._last_write = now
        with contextlib.suppress(OSError):
            registry.update_status(
                self.run, state=self.state, waiting=len(self.pending), cost_usd=round(self.cost, 6)
            )
