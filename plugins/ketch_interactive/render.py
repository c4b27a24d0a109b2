"""Turning turn events into terminal output (rich), one event at a time.

An answer is Markdown, rendered as it streams: every finished top-level block is
rendered once and printed (above the prompt, through prompt_toolkit's stdout patch);
the block still growing is the *live block*, which the shell shows inside its prompt,
rendered too, so text streams without raw ``**`` or fences and without the prompt and
the answer fighting over the cursor. Reasoning is collapsed to one dim line unless
``[interactive] show_reasoning = true``; ``/reasoning`` shows the last one.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console
from rich.markdown import Markdown
from rich.text import Text

from ketch_context_kit.budget import DEFAULT_CONTEXT_WINDOW, effective_capacity, estimate_messages
from ketch_context_kit.meter import band
from ketch_text_kit.terminal import event_for_terminal, for_terminal

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Event, Kernel, Session, UsageEvent

# Rich styles per meter band, and the same for prompt_toolkit.
BAND_STYLE = {"green": "green", "amber": "yellow", "orange": "dark_orange", "red": "bold red"}
BAND_PT_STYLE = {
    "green": "ansigreen",
    "amber": "ansiyellow",
    "orange": "#ff8700",
    "red": "ansired bold",
}
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
RESULT_PREVIEW_LINES = 3
TAIL_LINES = 5  # lines of a running call's output shown live
TODO_MARKS = {
    "completed": ("✔", "green"),
    "in_progress": ("▸", "bold cyan"),
    "pending": ("☐", ""),
}
CODE_THEME = "monokai"


class AnswerMarkdown(Markdown):
    """rich's Markdown, with a single newline kept as a line break (models write lines
    they mean as lines; CommonMark would join them)."""

    def __init__(self, markup: str) -> None:
        super().__init__(markup, code_theme=CODE_THEME)
        from markdown_it import MarkdownIt

        self.parsed = MarkdownIt().enable(["strikethrough", "table"]).parse(markup)
        for token in self.parsed:
            for child in token.children or ():
                if child.type == "softbreak":
                    child.type = "hardbreak"


def split_code(text: str) -> list[tuple[str, tuple[str, str]]]:
    """The text as ("markdown", (text, "")) and ("code", (code, language)) pieces, in
    order: every top-level fenced or indented code block is a piece of its own."""
    from markdown_it import MarkdownIt

    lines = text.split("\n")
    pieces: list[tuple[str, tuple[str, str]]] = []
    cursor = 0
    for token in MarkdownIt().parse(text):
        if token.level != 0 or token.type not in ("fence", "code_block") or not token.map:
            continue
        start, end = token.map
        if start > cursor:
            pieces.append(("markdown", ("\n".join(lines[cursor:start]), "")))
        language = (token.info or "").strip().split(" ")[0]
        pieces.append(("code", (token.content.rstrip("\n"), language)))
        cursor = end
    if cursor < len(lines):
        pieces.append(("markdown", ("\n".join(lines[cursor:]), "")))
    return pieces


def code_text(code: str, language: str) -> Text:
    """A code block's lines, highlighted by its language (plain when unknown)."""
    from rich.syntax import Syntax

    syntax = Syntax(code, language or "text", theme=CODE_THEME, background_color="default")
    text = syntax.highlight(code)
    text.rstrip()
    return text


class TerminalWriter:
    """Where the shell's own output goes: straight to the terminal when no prompt is
    open (in order, at once), above the prompt when one is (``run_in_terminal``).

    Writes made while a prompt is open are batched per event-loop iteration, so a burst
    of lines redraws the prompt once.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.pending: list[str] = []
        self.scheduled = False

    def write(self, text: str) -> int:
        from prompt_toolkit.application import get_app_or_none

        app = get_app_or_none()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None  # not on the event loop's thread: no prompt to work around here
        if app is None or not app.is_running or loop is None:
            self._write_now("".join(self.pending) + text)
            self.pending.clear()
            return len(text)
        self.pending.append(text)
        if not self.scheduled:
            self.scheduled = True
            loop.call_soon(self._flush_above_prompt)
        return len(text)

    def _write_now(self, text: str) -> None:
        if text:
            self.stream.write(text)
            self.stream.flush()

    def _flush_above_prompt(self) -> None:
        from prompt_toolkit.application import run_in_terminal

        self.scheduled = False
        text = "".join(self.pending)
        self.pending.clear()
        if text:
            run_in_terminal(lambda: self._write_now(text), in_executor=False)

    def flush(self) -> None:
        pass  # written as soon as the loop allows; nothing is held back longer

    def isatty(self) -> bool:
        return self.stream.isatty()


def make_console(stream: TextIO | None = None) -> Console:
    stream = stream or sys.__stdout__ or sys.stdout
    writer = TerminalWriter(stream)
    return Console(
        file=writer,  # type: ignore[arg-type]
        force_terminal=stream.isatty(),
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=True,
    )  # type: ignore[arg-type]


@dataclass
class Meter:
    """How full the context is, for the footer, the prompt and /status."""

    utilization: float
    tokens: int
    capacity: int
    estimated: bool = False

    @property
    def band(self) -> str:
        return band(self.utilization)

    def label(self) -> str:
        approx = "~" if self.estimated else ""
        return f"context {approx}{self.utilization:.0%}"

    def detail(self) -> str:
        approx = "~" if self.estimated else ""
        return f"{approx}{self.utilization:.0%} ({approx}{self.tokens:,} of {self.capacity:,} tokens, {self.band})"


def meter_for(session: Session, last: UsageEvent | None) -> Meter:
    """The last reported utilization, or an estimate of the request the session would send
    now (system prompt, tool schemas and the active context: what ``/context`` counts)."""
    if last is not None and last.effective_capacity:
        return Meter(last.context_utilization, last.context_tokens, last.effective_capacity)
    try:
        from ketch_context_kit.request import measure

        budget = measure(session)
        tokens, capacity = budget.projected, max(budget.capacity, 1)
    except Exception:  # noqa: BLE001 - a context plugin's failure must not break the prompt
        config = getattr(session.provider, "config", None)
        window = (
            session.context_window
            or getattr(config, "context_window", None)
            or DEFAULT_CONTEXT_WINDOW
        )
        reserve = session.kernel.settings.loop.max_output_tokens or getattr(
            config, "max_output_tokens", None
        )
        capacity = effective_capacity(int(window), reserve)
        tokens = estimate_messages(session.active)
    return Meter(min(tokens / capacity, 1.0), tokens, capacity, estimated=True)


def _rstrip(line: list[Any]) -> list[Any]:
    """A rendered line without the padding rich adds up to the width (kept where it is
    coloured, as a code block's background)."""
    from rich.segment import Segment

    out = list(line)
    while out:
        last = out[-1]
        if last.style is not None and last.style.bgcolor is not None:
            break
        stripped = last.text.rstrip(" ")
        if stripped:
            out[-1] = Segment(stripped, last.style, last.control)
            break
        out.pop()
    return out


def _section(kernel: Kernel) -> dict[str, Any]:
    try:
        section = kernel.settings.section("interactive")
    except Exception:  # noqa: BLE001 - settings that do not validate are reported elsewhere
        return {}
    return section if isinstance(section, dict) else {}


def tool_summary(kernel: Kernel, name: str, data: dict[str, Any], given: str = "") -> str:
    """What the tool itself says one call does (a shell tool: the full command line)."""
    if given:
        return given
    tool = kernel.tools.get(name)
    if tool is not None:
        try:
            return str(tool.summary(tool.input_model.model_validate(data)))
        except Exception:  # noqa: BLE001 - invalid input is reported by the loop, not here
            pass
    text = json.dumps(data, ensure_ascii=False)
    return text if len(text) <= 500 else text[:500] + " …"


def diff_text(diff: str) -> Text:
    out = Text()
    for line in diff.rstrip("\n").splitlines():
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        else:
            style = "dim"
        out.append("  " + line + "\n", style=style)
    out.rstrip()
    return out


class Renderer:
    """Prints events as they come. ``invalidate`` asks the open prompt to redraw."""

    def __init__(
        self, console: Console, kernel: Kernel, invalidate: Callable[[], None] = lambda: None
    ) -> None:
        self.console = console
        self.kernel = kernel
        self.invalidate = invalidate
        from ketch_interactive.markdown_stream import BlockSplitter

        self.answer = (
            BlockSplitter()
        )  # the streaming answer: finished blocks out, the last one live
        self.blocks_printed = 0  # blocks printed of the current answer (a blank line between them)
        self.live_kind = ""  # "text", "reasoning" (shown) or "thinking" (collapsed)
        self.reasoning = ""  # the reasoning of the current (or last) step
        self.reasoning_started = 0.0
        self.show_reasoning = bool(_section(kernel).get("show_reasoning", False))
        self._live_cache: tuple[Any, str] = (None, "")
        self.last_usage: UsageEvent | None = None
        self.turn_started = 0.0
        self.retry_until: float | None = None
        self.retry_kind = ""
        self.running_tool = ""
        self.declined: set[str] = set()  # tool calls whose refusal was already shown
        self.shown_summary: dict[str, str] = {}  # tool call id -> the summary its line showed
        self.hidden_notice_prefixes: list[str] = []
        self.failed = False
        self.changes: list[tuple[str, str]] = []  # (tool, diff) of every change this session made
        self.turn_changes: Any = None  # the turn's last ``changes`` event (for the footer)
        self.agents: dict[str, str] = {}  # subagent id -> its definition's name
        self.tail: list[str] = []  # the running call's last lines of output (live)
        self.tail_call = ""
        self.last_output: tuple[str, str] | None = None  # (title, text) for the pager (Ctrl-O)
        self.todos: list[dict[str, Any]] = []  # the model's task list (a ``todo`` event)

    # --- output --------------------------------------------------------------------------

    def line(self, text: str | Text, style: str = "") -> None:
        self.flush_live()
        self.console.print(
            text if isinstance(text, Text) else Text(for_terminal(text), style=style)
        )

    def say(self, text: str) -> None:
        """What slash commands print: plain text, never markup, never a terminal control."""
        self.line(Text(for_terminal(text)))

    @property
    def live(self) -> str:
        """The text still streaming (the live block, or shown reasoning's last line)."""
        if self.live_kind == "thinking":
            return f"✻ thinking… ({len(self.reasoning.split())} words)"
        return self.answer.tail

    def live_ansi(self, width: int, max_lines: int) -> str:
        """The live block rendered as it will be printed (ANSI), its last ``max_lines`` lines."""
        tail = self.live
        key = (tail, width, max_lines, self.live_kind)
        if self._live_cache[0] == key:
            return self._live_cache[1]
        if self.live_kind == "text":
            rendered = (
                self._render_ansi(AnswerMarkdown(tail.strip("\n")), width) if tail.strip() else ""
            )
        else:
            rendered = self._render_ansi(Text(tail, style="dim italic"), width)
        lines = rendered.rstrip("\n").split("\n")
        text = "\n".join(lines[-max_lines:]) if rendered else ""
        self._live_cache = (key, text)
        return text

    def _render_ansi(self, renderable: Any, width: int) -> str:
        import io

        buffer = io.StringIO()
        console = Console(
            file=buffer,
            width=max(width, 20),
            force_terminal=self.console.is_terminal,
            color_system=self.console.color_system,  # type: ignore[arg-type]
            no_color=self.console.no_color,
            highlight=False,
            emoji=False,
            markup=False,
        )
        console.print(renderable)
        return buffer.getvalue()

    def flush_live(self) -> None:
        """Print what is still live: the answer's last block, or the reasoning's summary line."""
        if self.live_kind == "thinking":
            self._close_reasoning()
        elif self.live_kind == "reasoning" and self.answer.tail:
            self.console.print(Text(self.answer.finish(), style="dim italic"))
            self.invalidate()
        elif self.answer.tail:
            self._print_blocks(self.answer.finish())
            self.invalidate()

    def _print_blocks(self, text: str) -> None:
        """Render finished blocks once and print them, one blank line between blocks.

        Code blocks are printed as their lines, highlighted, with no padding and no
        line breaks added: the terminal wraps a long line itself, so code copied from
        the scrollback is the code (rich's Markdown would wrap and indent it)."""
        for kind, chunk in split_code(text):
            if kind == "code":
                if self.blocks_printed:
                    self.console.print()
                self.console.print(code_text(*chunk), soft_wrap=True)
                self.blocks_printed += 1
            else:
                self._print_markdown(chunk[0])

    def print_answer(self, text: str) -> None:
        """A whole answer at once (a side question's), as streamed ones end up."""
        self.flush_live()
        self.blocks_printed = 0
        self._print_blocks(text)
        self.blocks_printed = 0

    def _print_markdown(self, text: str) -> None:
        from rich.segment import Segment, Segments

        if not text.strip():
            return
        lines = self.console.render_lines(
            AnswerMarkdown(text.strip("\n")), self.console.options, pad=False, new_lines=False
        )
        while lines and not "".join(seg.text for seg in lines[-1]).strip():
            lines.pop()
        while lines and not "".join(seg.text for seg in lines[0]).strip():
            lines.pop(0)
        if self.blocks_printed:
            self.console.print()
        segments: list[Segment] = []
        for line in lines:
            segments.extend(_rstrip(line))
            segments.append(Segment.line())
        self.console.print(Segments(segments), end="")
        self.blocks_printed += 1

    def _close_reasoning(self) -> None:
        took = time.monotonic() - self.reasoning_started if self.reasoning_started else 0.0
        self.live_kind = ""
        self.console.print(
            Text(
                f"✻ thought for {took:.0f}s · {len(self.reasoning.split())} words (/reasoning shows it)",
                style="dim italic",
            )
        )
        self.invalidate()

    def _stream(self, kind: str, chunk: str) -> None:
        if kind != self.live_kind:
            self.flush_live()
            self.live_kind = kind
            self.blocks_printed = 0
        if kind == "text":
            done = self.answer.feed(chunk)
            if done:
                self._print_blocks(done)
        elif kind == "reasoning":  # shown: plain dim lines, as they complete
            self.answer.pending += chunk
            if "\n" in self.answer.pending:
                *lines, self.answer.pending = self.answer.pending.split("\n")
                self.console.print(Text("\n".join(lines), style="dim italic"))
        self.invalidate()

    # --- events -----------------------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        """The session listener. A rendering bug must never break the turn."""
        try:
            # Text from the model or a tool is shown, never obeyed, by the terminal.
            self._dispatch(event_for_terminal(event))
        except Exception as exc:  # noqa: BLE001
            if not self.failed:
                self.failed = True
                (sys.__stderr__ or sys.stderr).write(
                    f"ketch: cannot show a {event.type} event: {type(exc).__name__}: {exc}\n"
                )

    def _dispatch(self, event: Event) -> None:
        if getattr(event, "agent_id", None):
            self._on_child(event)
            return
        handler = getattr(self, "_on_" + event.type, None)
        if handler is not None:
            handler(event)

    # --- subagents: their progress folded under the call that started them -----------------

    def _on_subagent(self, event: Any) -> None:
        self.agents[event.subagent_id] = event.name
        if event.status == "started":
            where = " (in the background)" if event.background else ""
            self.line(
                Text(f"  ⎿ {event.name} started{where}: {event.description}", style="magenta")
            )
        else:
            files = f" · {len(event.files_changed)} file(s) changed" if event.files_changed else ""
            self.line(
                Text(
                    f"  ⎿ {event.name} finished ({event.stop_reason or 'done'}){files}",
                    style="magenta",
                )
            )

    def _on_child(self, event: Any) -> None:
        """A subagent's own events: one indented line per call and per problem; its text
        is not streamed (its final answer comes back as the agent call's result)."""
        name = self.agents.get(event.agent_id, event.agent_id)
        kind = event.type
        if kind == "tool_call":
            summary = tool_summary(
                self.kernel, event.name, event.input, getattr(event, "summary", "")
            )
            first = summary.splitlines()[0] if summary else ""
            self.line(
                Text(
                    f"      {name} ● {event.name}  {first[: max(self.console.width - 20, 20)]}",
                    style="dim",
                )
            )
        elif kind == "tool_result" and not event.ok:
            first = (event.output or "failed").splitlines()[0]
            self.line(
                Text(f"      {name} ✗ {first[: max(self.console.width - 20, 20)]}", style="dim red")
            )
        elif kind == "permission" and event.decision == "deny":
            self.line(Text(f"      {name} ✗ denied: {event.reason}", style="dim red"))
        elif kind in ("error", "notice"):
            self.line(Text(f"      {name} ! {event.message}", style="dim yellow"))

    def _on_retry(self, event: Any) -> None:
        if event.discard:
            self.flush_live()
            self.line(
                "↻ the model's answer broke off; trying again (the partial answer above is discarded)",
                "yellow",
            )

    def _on_session(self, event: Any) -> None:
        from ketch.api import __version__

        head = Text()
        head.append(f"ketch {__version__}", style="bold")
        head.append(
            f" · {event.model} via {event.provider or '?'} · {event.mode} · {event.profile}",
            style="dim",
        )
        if event.resumed:
            head.append(f" · resumed {event.session_id}", style="dim")
        self.line(head)

    def _on_user_prompt(self, event: Any) -> None:
        self.turn_started = self.turn_started or time.monotonic()
        if event.steer:
            self.line(Text(f"↳ delivered to the model: {event.text}", style="dim italic"))

    def _on_text_delta(self, event: Any) -> None:
        self.retry_until = None
        self._stream("text", event.text)

    def _on_reasoning_delta(self, event: Any) -> None:
        self.retry_until = None
        if self.live_kind not in ("thinking", "reasoning"):
            self.reasoning, self.reasoning_started = "", time.monotonic()
        self.reasoning += event.text
        if self.show_reasoning:
            self._stream("reasoning", event.text)
        elif self.live_kind != "thinking":
            self.flush_live()
            self.live_kind = "thinking"
        self.invalidate()

    def _on_tool_call(self, event: Any) -> None:
        summary = tool_summary(self.kernel, event.name, event.input, getattr(event, "summary", ""))
        self.shown_summary = {event.id: summary}  # only the current call matters
        text = Text()
        text.append("● ", style="cyan")
        text.append(event.name, style="bold cyan")
        text.append("  " + summary.replace("\n", "\n    "))
        self.line(text)

    def _on_permission(self, event: Any) -> None:
        if event.decision == "allow":
            return
        if event.decision == "deny":
            self.declined.add(event.tool_call_id)
            self.line(f"  ✗ denied: {event.reason or 'a policy rule denies this'}", "red")
        elif event.approved:
            scope = f" (always: {event.scope})" if event.scope else ""
            self.line(f"  ✓ approved{scope}", "green")
        else:
            self.declined.add(event.tool_call_id)
            self.line("  ✗ declined", "yellow")

    def _on_tool_started(self, event: Any) -> None:
        self.running_tool = event.name
        self.tail, self.tail_call = [], event.tool_call_id
        self.invalidate()

    def _on_tool_output(self, event: Any) -> None:
        """A running call's new lines: the last few are shown live under the answer."""
        if event.tool_call_id != self.tail_call:
            self.tail, self.tail_call = [], event.tool_call_id
        self.tail = (self.tail + event.text.split("\n"))[-TAIL_LINES:]
        self.invalidate()

    def _on_todo(self, event: Any) -> None:
        """The model's task list: printed when it changes, and kept for the footer."""
        todos = [t for t in event.todos if isinstance(t, dict)]
        if todos == self.todos:
            return
        self.todos = todos
        if not todos:
            return
        done = sum(t.get("status") == "completed" for t in todos)
        text = Text(f"  Tasks {done}/{len(todos)}\n", style="bold")
        for item in todos:
            status = item.get("status")
            mark, style = TODO_MARKS.get(str(status), ("☐", ""))
            text.append(f"   {mark} {item.get('content', '')}\n", style=style)
        text.rstrip()
        self.line(text)

    def todo_footer(self, width: int) -> list[tuple[str, str]]:
        """One line under the status while a turn runs: progress and the task in hand."""
        if not self.todos or all(t.get("status") == "completed" for t in self.todos):
            return []
        done = sum(t.get("status") == "completed" for t in self.todos)
        current = next((t for t in self.todos if t.get("status") == "in_progress"), None)
        doing = ""
        if current is not None:
            doing = f" · ▸ {current.get('active_form') or current.get('content', '')}"
        line = f"  tasks {done}/{len(self.todos)}{doing}"
        if len(line) > width - 1:
            line = line[: max(width - 2, 10)] + "…"
        return [("class:todo", line + "\n")]

    def tail_fragments(self, width: int) -> list[tuple[str, str]]:
        """The live tail as prompt_toolkit fragments, one dim line each, cut to the width."""
        out: list[tuple[str, str]] = []
        for line in self.tail:
            shown = line.expandtabs(4)
            if len(shown) > width - 5:
                shown = shown[: max(width - 6, 10)] + "…"
            out.append(("class:tail", f"  │ {shown}\n"))
        return out

    def _on_tool_result(self, event: Any) -> None:
        self.running_tool = ""
        if event.tool_call_id == self.tail_call:
            self.tail, self.tail_call = [], ""
        if event.output and event.outcome not in ("cancelled", "refused"):
            title = f"{event.name}: {self.shown_summary.get(event.tool_call_id, '')}".strip(": ")
            self.last_output = (title, event.output)
        if event.outcome == "cancelled":
            return  # the turn's end says "⏹ cancelled" once
        if event.outcome == "refused" and event.tool_call_id in self.declined:
            return  # the permission line already said so
        if event.diff:
            self.line(diff_text(event.diff))
            if event.ok:
                self.changes.append((event.name, event.diff))
        lines = event.output.splitlines() or [""]
        preview = lines[:RESULT_PREVIEW_LINES]
        more = f"  … {len(lines) - len(preview)} more lines" if len(lines) > len(preview) else ""
        if not event.ok:
            body = "\n    ".join(preview)
            self.line(Text(f"  ✗ {body}{more}", style="red"))
        elif not event.diff:
            first = preview[0][: max(self.console.width - 30, 20)]
            extra = f"  (+{len(lines) - 1} lines · Ctrl-O shows all)" if len(lines) > 1 else ""
            self.line(Text(f"  ⎿ {first}{extra}", style="dim"))

    def _on_usage(self, event: Any) -> None:
        self.last_usage = event

    def _on_compaction(self, event: Any) -> None:
        by = f" ({event.compactor})" if event.compactor else ""
        self.line(
            f"⟳ context compacted: {event.before_tokens:,} → {event.after_tokens:,} tokens{by}",
            "cyan",
        )

    def _on_error(self, event: Any) -> None:
        if event.retryable and event.retry_in is not None:
            self.retry_until = time.monotonic() + event.retry_in
            self.retry_kind = event.kind
            self.line(
                f"⚠ {event.kind}: {event.message} · retrying in {event.retry_in:.1f}s", "yellow"
            )
        else:
            self.retry_until = None
            self.line(f"✗ {event.kind}: {event.message}", "bold red")

    def _on_notice(self, event: Any) -> None:
        if any(event.message.startswith(p) for p in self.hidden_notice_prefixes):
            return
        self.line(
            f"! {event.message}" if event.level == "warning" else f"· {event.message}",
            "yellow" if event.level == "warning" else "dim",
        )

    def _on_mode(self, event: Any) -> None:
        self.line(f"· mode {event.mode} · profile {event.profile}", "cyan")

    def _on_changes(self, event: Any) -> None:
        self.turn_changes = event

    def _on_turn_end(self, event: Any) -> None:
        self.flush_live()
        self.retry_until = None
        self.running_tool = ""
        reason = event.stop_reason
        if reason == "cancelled":
            self.line("⏹ cancelled", "yellow")
        elif reason == "error":
            self.line("✗ the turn ended with an error", "bold red")
        elif reason == "max_iterations":
            self.line("⏹ stopped at the iteration limit", "yellow")
        elif reason == "context_overflow":
            self.line("✗ the context does not fit the model (see above)", "bold red")
        footer = Text("── ", style="dim")
        if self.turn_started:
            footer.append(f"{time.monotonic() - self.turn_started:.1f}s · ", style="dim")
        footer.append(f"in {event.input_tokens:,} · out {event.output_tokens:,}", style="dim")
        cost = getattr(
            event, "cost_usd", None
        )  # the turn's own total; None when a price is unknown
        if cost is not None:
            footer.append(f" · ${cost:.4f}" if cost < 1 else f" · ${cost:.2f}", style="dim")
        if self.last_usage is not None:
            meter = Meter(
                self.last_usage.context_utilization,
                self.last_usage.context_tokens,
                self.last_usage.effective_capacity,
            )
            footer.append(" · ", style="dim")
            footer.append(meter.label(), style=BAND_STYLE[meter.band])
        changes, self.turn_changes = self.turn_changes, None
        if changes is not None and changes.paths:
            count = len(changes.paths)
            footer.append(f" · {count} file{'s' if count != 1 else ''} changed", style="cyan")
            if changes.revert:
                footer.append(
                    f" ({changes.revert} reverts {'them' if count != 1 else 'it'})", style="dim"
                )
        footer.append(" ──", style="dim")
        self.line(footer)
        self.turn_started = 0.0

    # --- what the prompt shows while a turn runs ----------------------------------------------

    def status(self) -> str:
        now = time.monotonic()
        spin = SPINNER[int(now * 8) % len(SPINNER)]
        if self.retry_until is not None:
            left = max(self.retry_until - now, 0.0)
            return f"{spin} {self.retry_kind}: retrying in {left:.0f}s"
        elapsed = f" {now - self.turn_started:.0f}s" if self.turn_started else ""
        doing = f"running {self.running_tool}" if self.running_tool else "working"
        return f"{spin} {doing}{elapsed}"
