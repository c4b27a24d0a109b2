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

    from ketch.api import ApprovalAnswer, ApprovalRequest

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
    default: T | None = None,
) -> T:
    """Pick one of ``(value, label, key)``; pressing ``key`` answers at once, Esc picks
    ``cancel``; ``keys`` are more one-key answers that are not listed as options;
    ``default`` is where the cursor starts (the first option when None)."""
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
        default=default,
    )
    return await prompt.prompt_async()


PERSON = "person"  # who answers here (PermissionEvent.origin, docs/provenance.md)
LONG_SUMMARY_LINES = 8  # taller than this, the summary is printed above the choice list
FAILS = "(this call will fail"  # how a tool's preview says the call cannot succeed


def summary_is_long(request: ApprovalRequest, width: int = 0) -> bool:
    """A summary too tall for the choice list (which must fit the screen), or with a line
    wider than it (``width``), is printed above it: there the terminal wraps it, so a
    long command copies as one line."""
    lines = request.summary.splitlines()
    wide = bool(width) and any(len(line) > width - 4 for line in lines)
    return len(lines) > LONG_SUMMARY_LINES or len(request.summary) > 1200 or wide


def will_fail(request: ApprovalRequest) -> bool:
    """The tool's own preview says the call would fail (e.g. a stale read)."""
    return (request.preview or "").lstrip().startswith(FAILS)


def _summary_in_preview(request: ApprovalRequest) -> bool:
    """The preview starts with the summary already (a command: ``$ COMMAND``)."""
    first = (request.preview or "").split("\n", 1)[0]
    summary = request.summary.strip()
    return bool(summary) and "\n" not in summary and first in (summary, f"$ {summary}")


def wrap_lines(text: str, width: int, first: str, rest: str) -> list[str]:
    import textwrap

    return textwrap.wrap(
        text, max(width, 30), initial_indent=first, subsequent_indent=rest, break_on_hyphens=False
    ) or [first]


def preview_room(request: ApprovalRequest, options: int, rows: int, width: int = 80) -> int:
    """How many preview lines fit above the choice list on a ``rows``-high screen."""
    if summary_is_long(request, width) or _summary_in_preview(request):
        summary = 1 if summary_is_long(request, width) else 0
    else:
        summary = len((request.summary or "-").splitlines())
    reason = (
        len(wrap_lines(request.reason, width - 2, "  why it asks: ", "    "))
        if request.reason
        else 0
    )
    remember = 2 if request.scope else 0  # the scope, when the options had to cut it
    fixed = 1 + summary + reason + remember + options + 3  # title, fold line, margins
    return max(rows - fixed, 3)


def approval_message(
    request: ApprovalRequest, *, preview_lines: int = 12, width: int = 80
) -> tuple[FormattedText, bool]:
    """The tool, the full summary (command line / path / URL), what it would do (the
    preview: a diff, folded to ``preview_lines``), the reason. True: the preview is folded.

    Each thing is said once: a command's preview (``$ COMMAND``) stands for its summary.
    A diff's lines are cut at the width (``v`` shows them whole); a warning that the
    call will fail, and the reason, are wrapped, never cut."""
    from ketch_interactive.diffview import folded

    asker = getattr(request, "agent", None)
    who = f" (asked by subagent {asker})" if asker else ""
    parts: list[tuple[str, str]] = [
        ("class:title", "Allow "),
        ("class:tool", request.call.tool),
        ("class:title", f"?{who}\n"),
    ]
    if summary_is_long(request, width):
        parts.append(("class:summary", "  (the full call is shown above)\n"))
    elif not _summary_in_preview(request):
        for line in (request.summary or "(no details)").splitlines() or [""]:
            parts.append(("class:summary", f"  {line}\n"))
    cut = 0
    if will_fail(request):
        for line in wrap_lines(" ".join((request.preview or "").split()), width - 2, "  ", "  "):
            parts.append(("class:reason", line + "\n"))
    elif request.preview:
        fragments, cut = folded(request.preview, max_lines=preview_lines, width=width)
        parts.extend(fragments)  # type: ignore[arg-type]
        if cut:
            parts.append(("class:diff.fold", f"  … {cut} more lines · press v to see all of it\n"))
    if request.reason:
        for line in wrap_lines(request.reason, width - 2, "  why it asks: ", "    "):
            parts.append(("class:reason", line + "\n"))
    return FormattedText(parts), bool(cut)


def _yes_label(request: ApprovalRequest) -> str:
    from ketch.api import Effect

    effects = set(request.call.effects)
    if will_fail(request):
        return "Yes, run it anyway"
    if Effect.EXECUTE in effects:
        return "Yes, run it"
    if Effect.WRITE in effects:
        return "Yes, make this change"
    return "Yes, allow it"


def fit_label(label: str, key: str, width: int) -> str:
    """An option's label cut (``…``) so that its key hint always shows: the list
    indents an option by 9 cells (``   ›  1. ``), and the hint takes ``  (k)``."""
    room = width - 9 - (len(key) + 4 if key else 0) - 2
    if len(label) <= room or room < 10:
        return label
    return label[: room - 1].rstrip() + "…"


def screen_size() -> tuple[int, int]:
    """(columns, rows) of the terminal prompt_toolkit draws on (not $COLUMNS: an
    inherited value can be stale, and prompt_toolkit asks the terminal itself)."""
    from prompt_toolkit.application.current import get_app_session

    try:
        size = get_app_session().output.get_size()
    except Exception:  # noqa: BLE001 - no terminal: the usual default
        return 80, 24
    return size.columns or 80, size.rows or 24


async def ask_approval(request: ApprovalRequest, read_note: Any) -> ApprovalAnswer:
    """Yes / no / yes for this session / always (when the request has a scope) / no with a note.

    The preview (a diff) is shown in the question, folded to fit the screen; ``v``
    opens all of it in a pager and comes back to the question. When the preview says
    the call will fail, No is where the cursor starts.
    ``read_note`` is an async callable that reads one line (the note for the model).
    """
    from ketch.api import ApprovalAnswer
    from ketch_interactive.diffview import page

    options: list[tuple[str, str, str]] = [("yes", _yes_label(request), "y")]
    if request.scope:
        options.append(("session", f"Yes, and allow {request.scope} for this session", "s"))
        options.append(("always", f"Always allow {request.scope} in this workspace", "a"))
    options.append(("no", "No", "n"))
    options.append(("note", "No, and tell the model what to do instead", "t"))
    while True:
        columns, rows = screen_size()
        shown = [(value, fit_label(label, key, columns), key) for value, label, key in options]
        message, is_folded = approval_message(
            request,
            preview_lines=preview_room(request, len(options), rows, columns),
            width=columns,
        )
        if request.scope and any(a[1] != b[1] for a, b in zip(options, shown, strict=True)):
            lines = wrap_lines(request.scope, columns - 2, "  s/a remember: ", "    ")
            message = FormattedText([*message, *(("class:scope", f"{x}\n") for x in lines)])
        picked = await choose(
            message,
            shown,
            cancel="no",
            keys={"v": "view"} if is_folded else None,
            default="no" if will_fail(request) else None,
        )
        if picked != "view":
            break
        await page(
            request.preview or "",
            f"{request.call.tool}: {request.summary.splitlines()[0] if request.summary else ''}",
        )
    if picked == "yes":
        return ApprovalAnswer(approved=True, remember="once", origin=PERSON)
    if picked in ("session", "always"):
        return ApprovalAnswer(approved=True, remember=picked, origin=PERSON)  # type: ignore[arg-type]
    if picked == "note":
        note = (await read_note("  note for the model: ")).strip()
        return ApprovalAnswer(approved=False, message=note or None, origin=PERSON)
    return ApprovalAnswer(approved=False, origin=PERSON)


async def confirm(message: FormattedText, yes: str, no: str) -> bool:
    return bool(await choose(message, [(True, yes, "y"), (False, no, "n")], cancel=False))
