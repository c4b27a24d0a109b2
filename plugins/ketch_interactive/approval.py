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
from prompt_toolkit.styles import Style

if TYPE_CHECKING:  # pragma: no cover
    from prompt_toolkit.application import Application

    from ketch.policy import ApprovalAnswer, ApprovalRequest

T = TypeVar("T")


class Interrupted(Exception):  # noqa: N818 - named for what the user did
    """Ctrl-C at a prompt. Not ``KeyboardInterrupt``: that one, escaping an asyncio task,
    stops the whole event loop, and the steer prompt runs as a task."""

STYLE = Style.from_dict(
    {
        "title": "bold",
        "tool": "bold ansicyan",
        "summary": "",
        "reason": "ansiyellow",
        "scope": "ansicyan",
        "selected-option": "bold",
        "number": "ansibrightblack",
    }
)


class _ErasingChoice(ChoiceInput[T]):
    """A choice list that disappears once answered (the answer is printed as a line)."""

    def _create_application(self) -> Application[T]:
        app = super()._create_application()
        app.erase_when_done = True
        return app


async def choose(message: FormattedText, options: list[tuple[T, str, str]], *, cancel: T | None = None) -> T:
    """Pick one of ``(value, label, key)``; pressing ``key`` answers at once, Esc picks ``cancel``."""
    bindings = KeyBindings()
    for value, _, key in options:
        if key:
            bindings.add(key, eager=True)(lambda event, v=value: event.app.exit(result=v))
    if cancel is not None:
        bindings.add("escape", eager=True)(lambda event: event.app.exit(result=cancel))
    labels = [(value, f"{label}  ({key})" if key else label) for value, label, key in options]
    prompt: _ErasingChoice[T] = _ErasingChoice(
        message=message, options=labels, style=STYLE, key_bindings=bindings, symbol="›", interrupt_exception=Interrupted
    )
    return await prompt.prompt_async()


LONG_SUMMARY_LINES = 8  # taller than this, the summary is printed above the choice list


def summary_is_long(request: ApprovalRequest) -> bool:
    """A summary too tall for the choice list (which must fit the screen) is printed above it."""
    return len(request.summary.splitlines()) > LONG_SUMMARY_LINES or len(request.summary) > 1200


def approval_message(request: ApprovalRequest) -> FormattedText:
    """The tool, the full summary (command line / path / URL), the reason, and the scope."""
    parts: list[tuple[str, str]] = [("class:title", "Allow "), ("class:tool", request.call.tool), ("class:title", "?\n")]
    if summary_is_long(request):
        parts.append(("class:summary", "  (the full call is shown above)\n"))
    for line in [] if summary_is_long(request) else (request.summary or "(no details)").splitlines() or [""]:
        parts.append(("class:summary", f"  {line}\n"))
    if request.reason:
        parts.append(("class:reason", f"  why it asks: {request.reason}\n"))
    return FormattedText(parts)


async def ask_approval(request: ApprovalRequest, read_note: Any) -> ApprovalAnswer:
    """Yes / no / yes for this session / always (when the request has a scope) / no with a note.

    ``read_note`` is an async callable that reads one line (the note for the model).
    """
    from ketch.policy import ApprovalAnswer

    options: list[tuple[str, str, str]] = [("yes", "Yes, run it", "y")]
    if request.scope:
        options.append(("session", f"Yes, and allow {request.scope} for this session", "s"))
        options.append(("always", f"Always allow {request.scope} in this workspace", "a"))
    options.append(("no", "No", "n"))
    options.append(("note", "No, and tell the model what to do instead", "t"))
    picked = await choose(approval_message(request), options, cancel="no")
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
