"""The interactive shell: read a line, run a turn, show its events, ask for approvals.

Design (why it looks like this):

* One prompt_toolkit ``PromptSession`` and ``patch_stdout``: everything printed goes
  *above* the prompt, so a prompt can stay open while a turn runs.
* While a turn runs, a second kind of prompt is open: the *steer* prompt. Its message
  shows the unfinished line of the streaming answer, a spinner with what is going on
  (working, running a tool, retrying in N s) and an input line; Enter hands the text
  to ``session.steer`` (the loop delivers it at its next step), Ctrl-C cancels the turn.
* When the loop asks for an approval, the steer prompt is closed (what was typed is
  kept and put back afterwards), the approval list is shown, and the answer goes back
  to the loop.
* Ctrl-C is a key while a prompt is open (the terminal is in raw mode); between
  prompts it is a SIGINT, which the shell's handler turns into the same cancel.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from prompt_toolkit import PromptSession
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.styles import Style

from ketch_frontend_kit.sessions import open_session
from ketch_interactive import slash
from ketch_interactive.approval import Interrupted, ask_approval, screen_size, summary_is_long
from ketch_interactive.history import EncryptedPromptHistory, open_history
from ketch_interactive.notify import report_focus
from ketch_interactive.render import BAND_PT_STYLE, Renderer, make_console, meter_for
from ketch_interactive.trust import has_offer, ignored_workspace_layer, offer_replaces, offer_trust
from ketch_interactive.unsaved import continue_unsaved

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ApprovalAnswer, ApprovalRequest, Kernel, PromptRequest, Provider, Session

CLOSED = object()  # the result of a prompt the shell closed itself (not the user's input)
SHOW_OUTPUT = object()  # Ctrl-O: the prompt closed to show the last call's whole output

STYLE = Style.from_dict(
    {
        "prompt": "bold ansicyan",
        "steer": "ansicyan",
        "status": "ansicyan",
        "hint": "ansibrightblack",
        "rprompt": "ansibrightblack",
        "tail": "ansibrightblack",
        "pending": "ansicyan italic",
        "todo": "ansicyan",
    }
)


def run_shell(kernel: Kernel) -> int:
    return asyncio.run(Shell(kernel).main())


class Shell:
    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.renderer = Renderer(make_console(), kernel, self._invalidate)
        self.session: Session = None  # type: ignore[assignment]  # set in main()
        self.history: History = InMemoryHistory()
        self.history_note: str | None = None
        self.prompt: PromptSession[Any] = None  # type: ignore[assignment]
        self.busy: asyncio.Future[Any] | None = None  # the turn or command Ctrl-C cancels
        self.approvals: asyncio.Queue[tuple[ApprovalRequest, asyncio.Future[ApprovalAnswer]]] = (
            asyncio.Queue()
        )
        self.next_default = ""  # text to put back into the next prompt
        self.queued: list[str] = []  # typed during a turn with Tab: sent when it is over
        self.side_tasks: set[asyncio.Future[Any]] = set()  # /btw questions asked during a turn
        from ketch_interactive.notify import Focus, escape_for
        from ketch_interactive.render import _section

        section = _section(kernel)
        self.focus = Focus()
        self.notify = str(section.get("notify", "auto"))
        self.notify_escape = escape_for(str(section.get("notify_escape", "auto")), kernel.environ)
        self.last_prompt = ""  # the last request sent (Esc Esc puts it back)
        self._meter_cache: tuple[Any, Any] = (None, None)

    # --- the whole run -----------------------------------------------------------------

    async def main(self) -> int:
        from prompt_toolkit.patch_stdout import patch_stdout

        layer = ignored_workspace_layer(self.kernel)
        offers = has_offer(self)
        if offers:  # the trust offer below lists them all, better
            self.renderer.hidden_notice_prefixes.extend(offer_replaces(layer))
        if getattr(self.kernel.args, "no_save", False):  # they typed it a moment ago
            self.renderer.hidden_notice_prefixes.append(
                "this session is not being saved: --no-save"
            )
        loop = asyncio.get_running_loop()
        opened = False
        try:
            opened = await self._open_session()
            if not opened:
                return 1
            self.history, self.history_note = open_history(self.kernel)
            self.prompt = self._make_prompt()
            self._catch_sigint()
            report_focus(self.notify != "off")
            with patch_stdout(raw=True):
                if self.history_note:
                    self.renderer.line(f"· {self.history_note}", "dim")
                if self.session.resumed:
                    self._recap()
                if offers:
                    await offer_trust(self)
                self.renderer.line("Type a request · /help for commands · Ctrl-D quits", "dim")
                await self._read_loop()
        except Exception as exc:  # noqa: BLE001 - one line, never a traceback
            self.renderer.line(f"ketch: the shell failed: {type(exc).__name__}: {exc}", "bold red")
            return 1
        finally:
            report_focus(False)
            for side in self.side_tasks:
                side.cancel()
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
            if opened:
                self._end_session(self.session, "exit")
                await self.close_provider(self.session.provider)
        return 0

    async def _open_session(self) -> bool:
        """The session the command line asks for. First the model (the first-run setup
        when no provider is configured), then where saved sessions' key lives (asked
        once where there is no OS keyring), then a store that exists but cannot be
        opened (continue unsaved?). False: there is no session (the reason was shown)."""
        from ketch.api import ConfigError, KetchError
        from ketch_interactive.storage import ask_storage

        resuming = getattr(self.kernel.args, "resume", None) or getattr(
            self.kernel.args, "continue_session", False
        )
        if not resuming and not await self._provider_ready():
            return False
        await ask_storage(self)
        if not continue_unsaved(self.kernel):
            return False
        try:
            self.session = open_session(self.kernel, [self.renderer.on_event])
            return True
        except ConfigError as exc:  # a broken config file: say where, never set up over it
            self.renderer.line(f"ketch: {exc.message}", "bold red")
            return False
        except KetchError as exc:
            if not resuming:  # the provider was checked above: this is something else
                self.renderer.line(f"ketch: {exc.message}", "bold red")
                return False
            if not await self._set_up_provider(exc):  # it says why
                return False
        try:
            self.session = open_session(self.kernel, [self.renderer.on_event])
        except KetchError as exc:
            self.renderer.line(f"ketch: {exc.message}", "bold red")
            return False
        return True

    async def _provider_ready(self) -> bool:
        """Whether a provider is configured; if not, the first-run setup (True: done)."""
        from ketch.api import KetchError

        notices = len(self.kernel.notices)
        try:
            self.kernel.provider_config()
        except KetchError as exc:
            del self.kernel.notices[notices:]  # what the failed attempt guessed no longer holds
            return await self._set_up_provider(exc)
        del self.kernel.notices[notices:]  # opening the session says them (once)
        return True

    async def _set_up_provider(self, exc: Any) -> bool:
        """The first-run setup, for a failure that means nothing is configured (no
        provider, or a key in the environment and no model). False: no session."""
        from ketch.api import ConfigError, NoProviderConfigured
        from ketch_interactive.setup import first_run_setup

        if isinstance(exc, ConfigError):  # a broken config file: say where, never set up over it
            self.renderer.line(f"ketch: {exc.message}", "bold red")
            return False
        settings = self.kernel.settings
        nothing_configured = not (
            settings.providers
            or settings.default_provider
            or getattr(self.kernel.args, "provider", None)
        )
        if not isinstance(exc, NoProviderConfigured) and not nothing_configured:
            self.renderer.line(f"ketch: {exc.message}", "bold red")
            return False
        if not await first_run_setup(self):  # (a key in the environment, but no model: too)
            self.renderer.line(f"ketch: {exc.message}", "")
            return False
        return True

    async def _read_loop(self) -> None:
        while True:
            slash.refresh(self)  # commands written during the last turn are known now
            default, self.next_default = self.next_default, ""
            self.prompt.app.erase_when_done = False
            try:
                text = await self.prompt.prompt_async(
                    self._main_message,
                    rprompt=self._rprompt,
                    default=default,
                    refresh_interval=0,
                    handle_sigint=False,
                    set_exception_handler=False,
                )
            except Interrupted:
                if not self.prompt.default_buffer.text.strip():
                    self.renderer.line("(Ctrl-D or /exit quits)", "dim")
                continue
            except EOFError:
                return
            if text is SHOW_OUTPUT:
                await self.show_output()
                continue
            self._report_history_error()
            if not text.strip():
                continue
            if await self.submit(text):
                return

    async def submit(self, text: str) -> bool:
        """A line from the main prompt: a command, ``!command`` or a request. True: leave the shell."""
        command = slash.parse(text)
        if command is not None:
            return await slash.dispatch(self, *command, during_turn=False)
        if text.startswith("!") and text[1:].strip():
            await self.run_cancellable(self.run_user_command(text[1:].strip()))
            return False
        self.last_prompt = text
        return await self.run_turn(text)

    async def run_user_command(self, command: str) -> None:
        """``!command``: the person's own command, in their shell, in the workspace (not
        through the policy: the model proposed nothing). Its output is shown, and the
        command with its output is recorded in the transcript, where the next request
        carries it to the model."""
        from ketch.api import Message, MessageEvent
        from ketch_prompt_kit.user_shell import run_user_command

        renderer = self.renderer
        renderer.line(f"$ {command}", "bold")
        pending = [""]

        def show(text: str) -> None:
            pending[0] += text
            *lines, pending[0] = pending[0].split("\n")
            for line in lines:
                renderer.say(line)

        result = None
        report_focus(False)  # no prompt reads the terminal meanwhile: its reports would echo
        try:
            result = await run_user_command(command, self.session.workspace, on_output=show)
        except OSError as exc:
            renderer.line(f"! could not run it: {exc.strerror or exc}", "red")
            return
        finally:  # cancelled (Ctrl-C): the command was stopped, and nothing is recorded
            report_focus(self.notify != "off")
            if pending[0]:
                renderer.say(pending[0])
        status = f"exit code {result.exit_code}" if result.exit_code is not None else "stopped"
        renderer.line(f"  ⎿ {status} · the model sees this with your next message", "dim")
        text = (
            "[The user ran this command in their own shell, in the workspace; its output follows.]\n"
            + result.transcript_text()
        )
        message = Message.user(text, synthetic=True)
        self.session.append(message)
        self.kernel.emit(self.session, MessageEvent(message=message))

    # --- one turn, with the steer prompt open --------------------------------------------

    async def run_prompt_request(self, request: PromptRequest) -> bool:
        """A prompt a command submitted: its turn, with its model and narrowed tools."""
        from ketch.api import KetchError

        narrowed = ""
        if request.allowed_tools is not None:
            narrowed = " · tools this turn: " + (", ".join(sorted(request.allowed_tools)) or "none")
        self.renderer.line(
            f"↳ {request.source or 'command'}: sending its prompt{narrowed}", "dim italic"
        )
        session = self.session
        if not request.model or request.model == session.model:
            return await self.run_turn(request.text, allowed_tools=request.allowed_tools)
        try:
            provider = self.kernel.build_provider(session.provider.name, request.model)
        except KetchError as exc:
            self.renderer.line(
                f"ketch: {request.source}: model {request.model}: {exc.message.splitlines()[0]}",
                "red",
            )
            return False
        old, session.provider = session.provider, provider
        try:
            return await self.run_turn(request.text, allowed_tools=request.allowed_tools)
        finally:
            session.provider = old
            await self.close_provider(provider)

    async def run_turn(self, text: str, *, allowed_tools: frozenset[str] | None = None) -> bool:
        """Run a turn to its end; answer approvals and take steers meanwhile. True: exit."""
        self.renderer.turn_started = time.monotonic()
        task = asyncio.ensure_future(
            self.kernel.run_turn(
                self.session, text, approver=self._approve, allowed_tools=allowed_tools
            )
        )
        self.busy = task
        self._catch_sigint()
        saved, leave = "", False
        try:
            while not task.done():
                steer = asyncio.ensure_future(self._steer_prompt(saved))
                asked = asyncio.ensure_future(self.approvals.get())
                done, _ = await asyncio.wait(
                    {task, steer, asked}, return_when=asyncio.FIRST_COMPLETED
                )
                if asked not in done:
                    asked.cancel()  # nothing is lost: an item stays in the queue
                kind, value = await self._finish_prompt(steer)
                saved = value if kind == "closed" else ""
                if kind == "text" and self._waits_for_the_turn(value):
                    saved = value  # kept in the line: Enter runs it once the turn is over
                elif kind == "text":
                    leave = await self._on_steer(value) or leave
                elif kind == "output":
                    self.next_default, saved = "", value
                    await self.show_output()
                elif kind == "interrupt":
                    task.cancel()
                    for side in self.side_tasks:  # a /btw asked during the turn, too
                        side.cancel()
                elif kind == "eof":
                    self.renderer.line(
                        "(Ctrl-C cancels the turn; Ctrl-D quits once it is over)", "dim"
                    )
                if asked in done:
                    await self._answer(*asked.result(), task)
                if leave and not task.done():
                    task.cancel()
            await self._await_turn(task)
        finally:
            self.busy = None
        if not leave:
            await self.attention(self._turn_summary(task), "idle")
        if saved:
            self.next_default = saved
        queued, self.queued = self.queued, []
        leftover = "\n\n".join(filter(None, [self._drain_steers(), *queued]))
        if leftover and not leave:
            if self._ended_normally(task):
                self.renderer.line("↳ sending what you typed as the next request", "dim italic")
                return await self.run_turn(leftover)
            # Cancelled or failed: give it back to edit rather than send it blindly.
            self.next_default = "\n".join(filter(None, [self.next_default, leftover]))
        return leave

    async def _await_turn(self, task: asyncio.Future[Any]) -> None:
        from ketch.api import KetchError

        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            self.renderer.line("⏹ cancelled", "yellow")
        except KetchError as exc:
            self.renderer.line(f"ketch: {exc.message}", "bold red")
        except Exception as exc:  # noqa: BLE001 - the shell outlives a failed turn
            self.renderer.line(f"ketch: the turn failed: {type(exc).__name__}: {exc}", "bold red")

    @staticmethod
    def _turn_summary(task: asyncio.Future[Any]) -> str:
        """One line for a notification: how the turn ended, and the answer's start."""
        if task.cancelled() or task.exception() is not None:
            return "ketch: the turn stopped"
        end = task.result()
        reason = getattr(end, "stop_reason", "")
        text = " ".join(str(getattr(end, "text", "") or "").split())
        if reason != "end_turn":
            return f"ketch: the turn ended ({reason})"
        return f"ketch is done: {text[:120]}" if text else "ketch is done"

    async def attention(self, message: str, kind: str) -> None:
        """Ring (bell, desktop notification) and run the Notification hooks, when the
        person looks elsewhere (see :mod:`ketch_interactive.notify`). ``permission``:
        the loop ran the hooks already, right before asking."""
        from ketch_interactive.notify import ring, should_notify

        if not should_notify(self.notify, self.focus):
            return
        ring(message, self.notify_escape)
        if kind != "permission":
            try:
                await self.kernel.hooks.call_async(
                    "ketch_notification", session=self.session, message=message, kind=kind
                )
            except Exception as exc:  # noqa: BLE001 - a hook's failure is not the shell's
                self.renderer.line(f"! a notification hook failed: {exc}", "yellow")

    @staticmethod
    def _ended_normally(task: asyncio.Future[Any]) -> bool:
        if task.cancelled() or task.exception() is not None:
            return False
        return getattr(task.result(), "stop_reason", "") == "end_turn"

    def _drain_steers(self) -> str:
        items: list[str] = []
        while not self.session.steers.empty():
            items.append(self.session.steers.get_nowait())
        return "\n".join(items)

    async def _steer_prompt(self, default: str) -> Any:
        self.prompt.app.erase_when_done = True  # closed or answered, it leaves no trace
        return await self.prompt.prompt_async(
            self._steer_message,
            rprompt="",
            default=default,
            refresh_interval=0.125,
            handle_sigint=False,
            set_exception_handler=False,
        )

    async def _finish_prompt(self, task: asyncio.Future[Any]) -> tuple[str, str]:
        """Close the steer prompt unless the user already answered it; say how it ended.

        ("text", line) | ("closed", what was typed so far) | ("interrupt", "") | ("eof", "")
        """
        app = self.prompt.app
        typed = ""
        if not task.done():
            if app.is_running and app.future is not None and not app.future.done():
                typed = self.prompt.default_buffer.text
                app.exit(result=CLOSED)
            else:
                task.cancel()
        try:
            result = await task
        except Interrupted:
            return "interrupt", ""
        except EOFError:
            return "eof", ""
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            return "closed", typed
        if result is CLOSED:
            return "closed", typed
        if result is SHOW_OUTPUT:
            return "output", self.next_default
        return "text", str(result)

    def _waits_for_the_turn(self, text: str) -> bool:
        command = slash.parse(text)
        if command is None or not slash.waits_for_the_turn(self, command[0]):
            return False
        self.renderer.line(
            f"/{command[0]} runs once the turn is over: it stays in the line "
            "(Enter then runs it; Ctrl-C cancels the turn now)",
            "yellow",
        )
        return True

    async def _on_steer(self, text: str) -> bool:
        if not text.strip():
            return False
        command = slash.parse(text)
        if command is not None:
            return await slash.dispatch(self, *command, during_turn=True)
        self.session.steer(text)  # shown as pending under the status line until delivered
        self._invalidate()
        return False

    def pending_steers(self) -> list[str]:
        """Steers typed but not yet delivered (the loop takes them at its next step)."""
        return list(getattr(self.session.steers, "_queue", ()))

    def take_back(self) -> str | None:
        """↑ on an empty line while a turn runs: the last message typed and not yet sent
        (queued for after the turn, else a steer the loop has not taken) back to edit."""
        if self.queued:
            return self.queued.pop()
        pending = getattr(self.session.steers, "_queue", None)  # asyncio.Queue's deque
        return pending.pop() if pending else None

    async def show_output(self) -> None:
        """Ctrl-O: the last finished call's whole output (what the model got), in the pager."""
        from ketch_interactive.diffview import page

        if self.renderer.last_output is None:
            return
        title, text = self.renderer.last_output
        await page(text, title, back="the prompt")

    # --- approvals ------------------------------------------------------------------------

    async def _approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        """The loop's approver: queue the request for the turn's supervisor and wait."""
        future: asyncio.Future[ApprovalAnswer] = asyncio.get_running_loop().create_future()
        self.approvals.put_nowait((request, future))
        return await future

    async def _answer(
        self,
        request: ApprovalRequest,
        future: asyncio.Future[ApprovalAnswer],
        turn: asyncio.Future[Any],
    ) -> None:
        if future.done():
            return
        self.renderer.flush_live()
        if (
            summary_is_long(request, screen_size()[0])
            and self.renderer.shown_summary.get(request.call.id) != request.summary
        ):
            self.renderer.line(f"{request.call.tool} wants to run:", "bold")
            self.renderer.line("  " + request.summary.replace("\n", "\n  "))
        summary = request.summary.splitlines()[0] if request.summary else ""
        await self.attention(
            f"ketch needs your approval: {request.call.tool} {summary}", "permission"
        )
        try:
            answer = await ask_approval(request, self._read_note)
        except Interrupted:
            turn.cancel()  # cancels the loop's wait on this answer too
            return
        except EOFError:
            from ketch.api import ApprovalAnswer

            answer = ApprovalAnswer(approved=False)
        if not future.done():
            future.set_result(answer)

    async def _read_note(self, message: str) -> str:
        # Its own session, history in memory: a note is not a prompt to recall later.
        reader: PromptSession[str] = PromptSession(
            history=InMemoryHistory(), interrupt_exception=Interrupted
        )
        try:
            return await reader.prompt_async(
                message, handle_sigint=False, set_exception_handler=False
            )
        except EOFError:
            return ""

    # --- sessions, providers, commands -------------------------------------------------------

    async def new_session(self) -> None:
        """/clear: end this session (it stays saved) and start a fresh one, same model."""
        old = self.session
        self._end_session(old, "clear")
        self.renderer.last_usage = None
        self.renderer.changes = []
        self.session = self.kernel.new_session(
            provider=old.provider, listeners=[self.renderer.on_event]
        )

    async def switch_session(self, session_id: str) -> None:
        """/resume: end this session (it stays saved) and continue another of this workspace.
        Knowledge comes back; authority does not (the profile is manual again)."""
        new = self.kernel.resume_session(session_id, listeners=[self.renderer.on_event])
        old = self.session
        self._end_session(old, "resume")
        self.session = new
        self.renderer.last_usage = None
        self.renderer.changes = []
        if old.provider is not new.provider:
            await self.close_provider(old.provider)
        self._recap()

    def _end_session(self, session: Session, reason: str) -> None:
        try:
            self.kernel.end(session, reason)
        except Exception as exc:  # noqa: BLE001 - a plugin's end hook must not cost the exit
            self.renderer.line(
                f"ketch: ending the session failed: {type(exc).__name__}: {exc}", "red"
            )

    async def close_provider(self, provider: Provider) -> None:
        with contextlib.suppress(Exception):
            await provider.aclose()

    async def run_cancellable(self, work: Awaitable[Any]) -> Any:
        """Run a command's coroutine so that Ctrl-C (SIGINT) can cancel it."""
        task = asyncio.ensure_future(work)
        self.busy = task
        self._catch_sigint()
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            self.renderer.line("⏹ cancelled", "yellow")
            return None
        finally:
            self.busy = None

    def history_status(self) -> str:
        if isinstance(self.history, EncryptedPromptHistory):
            skipped = (
                f"; {self.history.skipped} unreadable entries skipped"
                if self.history.skipped
                else ""
            )
            error = f"; {self.history.write_error}" if self.history.write_error else ""
            return f"encrypted at {self.history.path}{skipped}{error}"
        return self.history_note or "in memory only"

    def _report_history_error(self) -> None:
        error = getattr(self.history, "write_error", None)
        if error and not self._history_error_shown:
            self._history_error_shown = True
            self.renderer.line(f"! {error}", "yellow")

    _history_error_shown = False

    def _catch_sigint(self) -> None:
        """(Re)install the SIGINT handler that turns Ctrl-C between prompts into a cancel.

        Called before anything Ctrl-C should stop: a prompt_toolkit application that
        handled SIGINT itself (a third-party one, a future one) removes the loop's
        handler when it exits, and the next ``!command`` would then run on unstoppable."""
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, self._on_sigint)

    def _on_sigint(self) -> None:
        if self.busy is not None and not self.busy.done():
            self.busy.cancel()

    def _recap(self) -> None:
        """After --continue/--resume: the last request and answer, so the user knows where they are."""
        last_user = next(
            (
                m
                for m in reversed(self.session.transcript)
                if m.role == "user" and not m.synthetic and m.text
            ),
            None,
        )
        last_answer = next(
            (m for m in reversed(self.session.transcript) if m.role == "assistant" and m.text), None
        )
        for label, message in (("you", last_user), ("model", last_answer)):
            if message is None:
                continue
            lines = message.text.strip().splitlines()
            shown = "\n       ".join(lines[:4]) + (" …" if len(lines) > 4 else "")
            self.renderer.line(f"{label:>5}: {shown}", "dim")

    # --- prompt_toolkit pieces -------------------------------------------------------------------

    def _make_prompt(self) -> PromptSession[Any]:
        bindings = KeyBindings()

        @bindings.add("escape", "enter")
        def _newline(event: Any) -> None:
            event.current_buffer.insert_text("\n")

        @bindings.add("escape", "escape")
        def _edit_previous(event: Any) -> None:
            # The previous prompt back in the line, to edit and send again (a new request).
            if self.last_prompt:
                event.current_buffer.text = self.last_prompt
                event.current_buffer.cursor_position = len(self.last_prompt)

        from prompt_toolkit.filters import Condition, has_completions

        from ketch_interactive.notify import teach_parser

        focus_in, focus_out = teach_parser()

        @bindings.add(focus_in)
        def _focus_in(event: Any) -> None:
            self.focus.focused = True

        @bindings.add(focus_out)
        def _focus_out(event: Any) -> None:
            self.focus.focused = False

        @Condition
        def working() -> bool:
            return self.busy is not None and not self.busy.done()

        @bindings.add("tab", filter=working & ~has_completions)
        def _queue(event: Any) -> None:
            # Tab while a turn runs: hold the message until the turn is over (Enter steers).
            text = event.current_buffer.text
            if not text.strip():
                return
            if slash.parse(text) is not None:
                self.renderer.line("a /command is not queued: press Enter to run it", "yellow")
                return
            self.queued.append(text)
            event.current_buffer.reset()

        @Condition
        def can_take_back() -> bool:
            empty = not self.prompt.default_buffer.text
            return empty and bool(self.queued or self.pending_steers())

        @bindings.add("up", filter=working & can_take_back)
        def _take_back(event: Any) -> None:
            taken = self.take_back()
            if taken is not None:
                event.current_buffer.text = taken
                event.current_buffer.cursor_position = len(taken)

        @bindings.add("c-o")
        def _show_output(event: Any) -> None:
            # The last call's whole output, in the pager; what is typed comes back after.
            if self.renderer.last_output is None:
                return
            self.next_default = event.current_buffer.text
            event.app.erase_when_done = True
            event.app.exit(result=SHOW_OUTPUT)

        @bindings.add("s-tab")
        def _next_mode(event: Any) -> None:
            # The next of the modes plugins declare (plan ↔ build with the policy plugin).
            if self.busy is not None:  # the mode of a running turn's steps stays as it was
                return
            names = list(self.kernel.modes)
            if len(names) < 2:
                self.renderer.line(
                    "· no other mode to switch to (no plugin declares more than one)", "dim"
                )
                return
            current = self.session.mode
            self.session.set_mode(
                names[(names.index(current) + 1) % len(names)] if current in names else names[0]
            )

        from ketch_interactive.completion import ShellCompleter

        completer = ShellCompleter(self.kernel.workspace, lambda: slash.completions(self))
        session: PromptSession[Any] = PromptSession(
            history=self.history,
            key_bindings=bindings,
            style=STYLE,
            completer=completer,
            complete_while_typing=True,
            prompt_continuation=lambda width, line, soft: "… ".rjust(width),
            enable_history_search=False,
            interrupt_exception=Interrupted,
        )
        # A burst of tokens redraws the live block at most 25 times a second (no flicker,
        # and the cost of a token does not include a full redraw).
        session.app.min_redraw_interval = 0.04
        return session

    def _invalidate(self) -> None:
        prompt = self.prompt
        if prompt is not None and prompt.app.is_running:
            prompt.app.invalidate()

    def _main_message(self) -> FormattedText:
        return FormattedText([("class:prompt", "❯ ")])

    def _rprompt(self) -> FormattedText:
        if self.prompt.app.is_done:  # an accepted line keeps no meter in the scrollback
            return FormattedText([])
        session = self.session
        key = (id(session), len(session.active), id(self.renderer.last_usage))
        if (
            self._meter_cache[0] != key
        ):  # the estimate walks the context: once per change, not per keypress
            self._meter_cache = (key, meter_for(session, self.renderer.last_usage))
        meter = self._meter_cache[1]
        return FormattedText(
            [
                ("class:rprompt", f"{session.mode} · {session.profile} · "),
                (BAND_PT_STYLE[meter.band], meter.label()),
            ]
        )

    def _steer_message(self) -> FormattedText:
        from prompt_toolkit.formatted_text import ANSI, to_formatted_text

        renderer = self.renderer
        parts: list[tuple[str, str]] = []
        size = self.prompt.app.output.get_size()
        if renderer.live:
            rendered = renderer.live_ansi(size.columns, max(size.rows - 4, 1))
            if rendered:
                parts.extend(to_formatted_text(ANSI(rendered + "\n")))  # type: ignore[arg-type]
        parts.extend(renderer.tail_fragments(size.columns))
        parts.extend(renderer.todo_footer(size.columns))
        for label, items in (
            ("next step", self.pending_steers()),
            ("after this turn", self.queued),
        ):
            for item in items:
                first = " ".join(item.split())
                room = max(size.columns - len(label) - 8, 10)
                first = first if len(first) <= room else first[: room - 1] + "…"
                parts.append(("class:pending", f"  ↳ {label}: {first}\n"))
        parts.append(("class:status", renderer.status()))
        parts.append(
            ("class:hint", "  · Enter steers · Tab queues · ↑ edits them · Ctrl-C cancels\n")
        )
        parts.append(("class:steer", "↳ "))
        return FormattedText(parts)
