"""Asking the user: the approval prompt for a tool call, and yes/no questions.

A choice list (prompt_toolkit's ``ChoiceInput``) with one-key answers. The list is
erased once answered; the renderer then prints a one-line verdict from the
``permission`` event. Ctrl-C raises :class:`Interrupted`: the shell cancels the turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.shortcuts.choice_input import ChoiceInput
from prompt_toolkit.styles import BaseStyle, Style

if TYPE_CHECKING:  # pragma: no cover
    from prompt_toolkit.application import Application

    from ketch.policy import ApprovalAnswer, ApprovalRequest

T = TypeVar("T")


class Interrupted(Exception):  # noqa: N818 - named for what the user did
    """Ctrl-C at a prompt. Not ``KeyboardInterrupt``: that one, escaping an asyncio task,
    stops the whole event loop, and the steer prompt runs as a task."""


def _style() -> BaseStyle:
    from prompt_toolkit.styles import merge_styles, style_from_pygments_cls
    from pygments.styles import get_style_by_name

    from ketch_interactive.diffview import DIFF_STYLE

    own = Style.from_dict(
        {
            "title": "bold",
            "tool": "bold ansicyan",
            "summary": "",
            "reason": "ansiyellow",
            "scope": "ansicyan",
            "selected-option": "bold",
            "number": "ansibrightblack",
            **DIFF_STYLE,
        }
    )
    return merge_styles([style_from_pygments_cls(get_style_by_name("monokai")), own])


class _ErasingChoice(ChoiceInput[T]):
    """A choice list that disappears once answered (the answer is printed as a line)."""

    def _create_application(self) -> Application[T]:
        app = super()._create_application()
        app.erase_when_done = True
        return app

    async def prompt_async(self) -> T:
        # Ctrl-C is a key here (raw mode); leaving SIGINT alone keeps the shell's own
        # handler installed, which is what stops a ``!command`` later on.
        return await self._create_application().run_async(handle_sigint=False)


async def choose(
    message: FormattedText,
    options: list[tuple[T, str, str]],
    *,
    cancel: T | None = None,
    keys: dict[str, T] | None = None,
) -> T:
    """Pick one of ``(value, label, key)``; pressing ``key`` answers at once, Esc picks
    ``cancel``; ``keys`` are more one-key answers that are not listed as options."""
    bindings = KeyBindings()
    for value, _, key in options:
        if key:
            bindings.add(key, eager=True)(lambda event, v=value: event.app.exit(result=v))
    for key, value in (keys or {}).items():
        bindings.add(key, eager=True)(lambda event, v=value: event.app.exit(result=v))
    if cancel is not None:
        bindings.add("escape", eager=True)(lambda event: event.app.exit(result=cancel))
    labels = [(value, f"{label}  ({key})" if key else label) for value, label, key in options]
    prompt: _ErasingChoice[T] = _ErasingChoice(
        message=message,
        options=labels,
        style=_style(),
        key_bindings=bindings,
        symbol="›",
        interrupt_exception=Interrupted,
    )
    return await prompt.prompt_async()


LONG_SUMMARY_LINES = 8  # taller than this, the summary is printed above the choice list


def summary_is_long(request: ApprovalRequest) -> bool:
    """A summary too tall for the choice list (which must fit the screen) is printed above it."""
    return len(request.summary.splitlines()) > LONG_SUMMARY_LINES or len(request.summary) > 1200


def preview_room(request: ApprovalRequest, options: int, rows: int) -> int:
    """How many preview lines fit above the choice list on a ``rows``-high screen."""
    summary = 1 if summary_is_long(request) else len((request.summary or "-").splitlines())
    fixed = 1 + summary + (1 if request.reason else 0) + options + 3  # title, fold line, margins
    return max(rows - fixed, 3)


def approval_message(
    request: ApprovalRequest, *, preview_lines: int = 12, width: int = 80
) -> tuple[FormattedText, bool]:
    """The tool, the full summary (command line / path / URL), what it would do (the
    preview: a diff, folded to ``preview_lines``), the reason. True: the preview is folded."""
    from ketch_interactive.diffview import folded

    asker = getattr(request, "agent", None)
    who = f" (asked by subagent {asker})" if asker else ""
    parts: list[tuple[str, str]] = [
        ("class:title", "Allow "),
        ("class:tool", request.call.tool),
        ("class:title", f"?{who}\n"),
    ]
    if summary_is_long(request):
        parts.append(("class:summary", "  (the full call is shown above)\n"))
    for line in (
        [] if summary_is_long(request) else (request.summary or "(no details)").splitlines() or [""]
    ):
        parts.append(("class:summary", f"  {line}\n"))
    cut = 0
    if request.preview:
        fragments, cut = folded(request.preview, max_lines=preview_lines, width=width)
        parts.extend(fragments)  # type: ignore[arg-type]
        if cut:
            parts.append(("class:diff.fold", f"  … {cut} more lines · press v to see all of it\n"))
    if request.reason:
        parts.append(("class:reason", f"  why it asks: {request.reason}\n"))
    return FormattedText(parts), bool(cut)


async def ask_approval(request: ApprovalRequest, read_note: Any) -> ApprovalAnswer:
    """Yes / no / yes for this session / always (when the request has a scope) / no with a note.

    The preview (a diff) is shown in the question, folded to fit the screen; ``v``
    opens all of it in a pager and comes back to the question.
    ``read_note`` is an async callable that reads one line (the note for the model).
    """
    import shutil

    from ketch.policy import ApprovalAnswer
    from ketch_interactive.diffview import page

    options: list[tuple[str, str, str]] = [("yes", "Yes, run it", "y")]
    if request.scope:
        options.append(("session", f"Yes, and allow {request.scope} for this session", "s"))
        options.append(("always", f"Always allow {request.scope} in this workspace", "a"))
    options.append(("no", "No", "n"))
    options.append(("note", "No, and tell the model what to do instead", "t"))
    while True:
        size = shutil.get_terminal_size((80, 24))
        message, is_folded = approval_message(
            request,
            preview_lines=preview_room(request, len(options), size.lines),
            width=size.columns,
        )
        picked = await choose(
            message, options, cancel="no", keys={"v": "view"} if is_folded else None
        )
        if picked != "view":
            break
        await page(
            request.preview or "",
            f"{request.call.tool}: {request.summary.splitlines()[0] if request.summary else ''}",
        )
    if picked == "yes":
        return ApprovalAnswer(approved=True, remember="once")
    if picked in ("session", "always"):
        return ApprovalAnswer(approved=True, remember=picked)  # type: ignore[arg-type]
    if picked == "note":
        note = (await read_note("  note for the model: ")).strip()
        return ApprovalAnswer(approved=False, message=note or None)
    return ApprovalAnswer(approved=False)


async def confirm(message: FormattedText, yes: str, no: str) -> bool:
    return bool(await choose(message, [(True, yes, "y"), (False, no, "n")], cancel=False))
