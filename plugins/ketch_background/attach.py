"""``ketch attach ID``: a background session on this terminal.

While the run works: its conversation so far, then its live output (answer text as it
streams, tool calls and results, subagents), and each approval it waits for, answered
here (yes / yes for this session / no / no with a note). What you type and send with
Enter reaches the model at its next step (a steer); ``/stop`` stops the run;
Ctrl-D, Ctrl-C or ``/detach`` leaves it running. Several people (terminals) may attach
at once: the first answer to an approval counts, and the others see it answered.

Once the run's turn is over (or when it was over already), the session opens in the
interactive shell (``--resume``), in its own workspace, to go on with it there.

Only a person answers: attaching needs a terminal on stdin and stdout (a tool call's
command has none, and the sandbox hides the socket anyway).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch_background.protocol import MAX_LINE, decode, encode

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel
    from ketch_background.registry import Status

CLOSED = object()


class Printer:
    """Events as lines for a person (everything from the model or a tool escaped)."""

    def __init__(self) -> None:
        self.line = ""  # the streaming answer's unfinished line

    def say(self, text: str) -> None:
        from ketch_text_kit.terminal import for_terminal

        print(for_terminal(text), flush=True)

    def flush(self) -> None:
        if self.line:
            self.say(self.line)
            self.line = ""

    def text(self, delta: str) -> None:
        *done, self.line = (self.line + delta).split("\n")
        for line in done:
            self.say(line)

    def message(self, message: dict[str, Any]) -> None:
        """One message of the conversation so far (the history shown on attach)."""
        role = message.get("role")
        for part in message.get("parts") or []:
            kind = part.get("type")
            if kind == "text" and part.get("text", "").strip():
                if role == "user" and message.get("synthetic"):
                    continue
                prefix = "❯ " if role == "user" else ""
                self.say(prefix + part["text"].rstrip())
            elif kind == "tool_call":
                self.say(
                    f"● {part.get('name')}  {_short(json.dumps(part.get('input'), ensure_ascii=False))}"
                )
            elif kind == "tool_result":
                self._result(
                    bool(part.get("ok", not part.get("is_error", False))),
                    str(part.get("output") or part.get("content") or ""),
                )

    def _result(self, ok: bool, output: str) -> None:
        lines = output.strip().splitlines() or [""]
        more = f"  (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
        self.say(f"  ⎿ {'' if ok else '✗ '}{_short(lines[0])}{more}")

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        agent = f"[{event['agent_id']}] " if event.get("agent_id") else ""
        if kind == "text_delta":
            if agent:
                return  # a subagent's answer comes back as its result
            self.text(str(event.get("text", "")))
            return
        self.flush() if kind != "reasoning_delta" else None
        if kind == "tool_call":
            self.say(
                f"{agent}● {event.get('name')}  {_short(json.dumps(event.get('input'), ensure_ascii=False))}"
            )
        elif kind == "tool_output" and not agent:
            for line in str(event.get("text") or "").splitlines():
                self.say(f"  │ {line}")
        elif kind == "tool_result":
            self._result(bool(event.get("ok")), str(event.get("output") or ""))
        elif kind == "permission" and event.get("decision") != "allow":
            if event.get("decision") == "deny":
                self.say(f"  ✗ denied: {event.get('reason')}")
            else:
                self.say("  ✓ approved" if event.get("approved") else "  ✗ declined")
        elif kind == "notice":
            self.say(f"· {event.get('message')}")
        elif kind == "error":
            self.say(f"⚠ {event.get('kind')}: {event.get('message')}")
        elif kind == "subagent":
            self.say(
                f"↳ agent {event.get('name')} {event.get('status')}: {event.get('description') or ''}"
            )
        elif kind == "turn_end" and not agent:
            self.say(f"── the background turn ended: {event.get('stop_reason')} ──")


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class View:
    def __init__(self, status: Status) -> None:
        self.status = status
        self.printer = Printer()
        self.pending: dict[str, dict[str, Any]] = {}
        self.ended = False
        self.saved = ""

    async def main(self) -> str:
        """``ended`` (the turn is over), ``detached`` or ``stopped``; ``lost`` when the
        run went away."""
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import InMemoryHistory
        from prompt_toolkit.patch_stdout import patch_stdout

        try:
            reader, writer = await asyncio.open_unix_connection(self.status.socket, limit=MAX_LINE)
        except OSError as exc:
            print(
                f"ketch: cannot reach {self.status.session_id}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return "lost"
        self.writer = writer
        writer.write(encode({"op": "attach"}))
        await writer.drain()
        hello = decode(await reader.readline()) or {}
        self._header(hello)
        self.input: PromptSession[str] = PromptSession(history=InMemoryHistory())
        with patch_stdout(raw=True):
            try:
                return await self._loop(reader)
            finally:
                with contextlib.suppress(Exception):
                    writer.close()

    def _header(self, hello: dict[str, Any]) -> None:
        say = self.printer.say
        say(
            f"attached to {hello.get('session_id')} · {hello.get('model')} via {hello.get('provider')} · "
            f"{hello.get('mode')} · {hello.get('profile')}"
        )
        say(f"workspace {hello.get('workspace')}")
        for message in hello.get("history") or []:
            self.printer.message(message)
        if hello.get("partial"):
            self.printer.text(str(hello["partial"]))
        for item in hello.get("pending") or []:
            self.pending[str(item["id"])] = item
        if hello.get("ended"):
            self.printer.flush()
            self.ended = True
        say(
            "Enter sends what you type to the model (a steer) · /stop stops the run · Ctrl-D detaches"
        )

    async def _loop(self, reader: asyncio.StreamReader) -> str:
        self.reader = reader
        self.incoming: asyncio.Future[bytes] = asyncio.ensure_future(reader.readline())
        typing: asyncio.Future[Any] | None = None
        try:
            while True:
                if self.ended:
                    self.printer.flush()
                    return "ended"
                if self.pending:
                    if typing is not None:
                        self.saved = await _close(self.input, typing)
                        typing = None
                    if not await self._approve(next(iter(self.pending.values()))):
                        return "detached" if self.reader_open else "lost"
                    continue
                if typing is None:
                    default, self.saved = self.saved, ""
                    typing = asyncio.ensure_future(
                        self.input.prompt_async("› ", default=default, handle_sigint=False)
                    )
                done, _ = await asyncio.wait(
                    {self.incoming, typing}, return_when=asyncio.FIRST_COMPLETED
                )
                if self.incoming in done and not self._received():
                    return "lost"
                if typing in done:
                    kind, text = _outcome(typing)
                    typing = None
                    if kind in ("eof", "interrupt"):
                        return "detached"
                    what = await self._command(text)
                    if what:
                        return what
        finally:
            if typing is not None:
                await _close(self.input, typing)
            self.incoming.cancel()

    reader_open = True

    def _received(self) -> bool:
        """Handle the line that arrived; False when the run went away."""
        line = self.incoming.result()
        if not line:
            self.reader_open = False
            self.printer.flush()
            self.printer.say("· the background run went away")
            return False
        self.incoming = asyncio.ensure_future(self.reader.readline())
        message = decode(line) or {}
        kind = message.get("type")
        if kind == "event":
            self.printer.event(message.get("event") or {})
        elif kind == "approval":
            self.pending[str(message.get("id"))] = message
        elif kind == "approval_closed":
            self.pending.pop(str(message.get("id")), None)
        elif kind == "end":
            self.ended = True
        return True

    async def _command(self, text: str) -> str | None:
        line = text.strip()
        if not line:
            return None
        if line in ("/detach", "/exit", "/quit"):
            return "detached"
        if line == "/stop":
            from ketch_background.commands import stop

            self.printer.say("· stopping it…")
            self.printer.say(await asyncio.to_thread(stop, self.status, 10.0))
            return "stopped"
        await self._send({"op": "steer", "text": text})
        self.printer.say(f"↳ {text}  (for the model's next step)")
        return None

    async def _send(self, message: dict[str, Any]) -> None:
        self.writer.write(encode(message))
        with contextlib.suppress(ConnectionError):
            await self.writer.drain()

    async def _approve(self, item: dict[str, Any]) -> bool:
        """Ask the person about one approval; False when they detach (or the run went
        away) without answering: the run goes on waiting."""
        from prompt_toolkit import PromptSession

        self.printer.flush()
        say = self.printer.say
        who = f" ({item['agent']})" if item.get("agent") else ""
        say(f"? {item.get('tool')}{who} needs your approval: {item.get('summary')}")
        if item.get("reason"):
            say(f"  why it asks: {item['reason']}")
        preview = str(item.get("preview") or "").splitlines()
        for line in preview[:30]:
            say(f"  {line}")
        if len(preview) > 30:
            say(f"  … {len(preview) - 30} more lines")
        scope = (
            f" · [s] yes, and allow {item['scope']} for this session" if item.get("scope") else ""
        )
        question = f"allow it? [y]es{scope} · [n]o · [t] no, with a note: "
        asker: PromptSession[str] = PromptSession()
        ident = str(item.get("id"))
        while ident in self.pending:
            asking: asyncio.Future[Any] = asyncio.ensure_future(
                asker.prompt_async(question, handle_sigint=False)
            )
            while not asking.done():
                done, _ = await asyncio.wait(
                    {self.incoming, asking}, return_when=asyncio.FIRST_COMPLETED
                )
                if self.incoming in done and (not self._received() or ident not in self.pending):
                    await _close(asker, asking)
                    if self.reader_open:
                        say("· answered elsewhere")
                        return True
                    return False
            kind, text = _outcome(asking)
            if kind in ("eof", "interrupt"):
                say("· detached without answering: the run goes on waiting")
                return False
            answer = text.strip().lower()
            if answer in ("y", "yes"):
                await self._answer(ident, True, "once")
            elif answer in ("s", "session") and item.get("scope"):
                await self._answer(ident, True, "session")
            elif answer in ("n", "no"):
                await self._answer(ident, False, "once")
            elif answer in ("t", "tell"):
                note_session: PromptSession[str] = PromptSession()
                try:
                    note = await note_session.prompt_async(
                        "note for the model: ", handle_sigint=False
                    )
                except (EOFError, KeyboardInterrupt):
                    continue
                await self._answer(ident, False, "once", note)
        return True

    async def _answer(self, ident: str, approved: bool, remember: str, note: str = "") -> None:
        await self._send(
            {
                "op": "answer",
                "id": ident,
                "approved": approved,
                "remember": remember,
                "message": note or None,
            }
        )
        self.pending.pop(ident, None)
        self.printer.say("  ✓ approved" if approved else "  ✗ declined")


def _outcome(task: asyncio.Future[Any]) -> tuple[str, str]:
    try:
        result = task.result()
    except EOFError:
        return "eof", ""
    except KeyboardInterrupt:
        return "interrupt", ""
    except asyncio.CancelledError:
        return "closed", ""
    if result is CLOSED:
        return "closed", ""
    return "text", str(result)


async def _close(session: Any, task: asyncio.Future[Any]) -> str:
    """Close an open prompt; what was typed in it."""
    typed = ""
    app = session.app
    if not task.done():
        if app.is_running and app.future is not None and not app.future.done():
            typed = session.default_buffer.text
            app.exit(result=CLOSED)
        else:
            task.cancel()
    with contextlib.suppress(BaseException):
        await task
    return typed


def attach(kernel: Kernel, ident: str) -> int:
    from ketch.api import KetchError
    from ketch_background import registry
    from ketch_background.commands import lookup

    status = lookup(ident)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise KetchError(
            "ketch attach needs a terminal: a background session's approvals are answered by a person at one",
            exit_code=2,
        )
    if status.alive and status.socket:
        outcome = asyncio.run(View(status).main())
        if outcome in ("detached", "stopped"):
            if outcome == "detached":
                print(
                    f"ketch: detached; {status.session_id} goes on (ketch attach {status.session_id})"
                )
            return 0
        deadline = time.monotonic() + 30
        while registry.lock_held(status.run) and time.monotonic() < deadline:
            time.sleep(0.05)
    if not status.session_id:
        raise KetchError(f"{status.run} never started a session ({status.state})")
    return open_in_shell(kernel, status.session_id)


def open_in_shell(kernel: Kernel, session_id: str) -> int:
    """The session, resumed in the interactive shell, in its own workspace."""
    from ketch.api import KetchError
    from ketch_launch_kit import run_frontend

    store = kernel.store
    if store is None:
        raise KetchError("no session store is loaded, so the session cannot be opened")
    record = store.load_session(session_id)
    workspace = Path(record.workspace or kernel.workspace)
    if not workspace.is_dir():
        raise KetchError(f"{session_id}'s workspace {workspace} is gone")
    args = copy.copy(kernel.args)
    for name in ("_command", "command"):
        if hasattr(args, name):
            delattr(args, name)
    args.resume, args.prompt, args.frontend = session_id, None, None
    args.continue_session = False
    print(f"ketch: opening {session_id} in the shell", file=sys.stderr)
    return run_frontend(args, workspace, environ=kernel.environ)


__all__ = ["Printer", "View", "attach", "open_in_shell"]
