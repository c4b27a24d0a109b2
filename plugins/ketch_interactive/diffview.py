"""Showing a proposed change before it is approved: a highlighted diff, folded to fit
the screen, and a pager to scroll through all of it.

A diff line keeps its ``+``/``-`` marker in a colour of its own and gets a tinted
background; the code after the marker is highlighted by the file's own language
(Pygments, guessed from the file name in the diff header). Under ``NO_COLOR``
prompt_toolkit drops every colour and the markers still say what changes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from prompt_toolkit.formatted_text import StyleAndTextTuples

_HEADER_FILE = re.compile(r"^\+\+\+ (?:b/)?(.+?)\s*$", re.MULTILINE)

DIFF_STYLE = {
    "diff.header": "bold",
    "diff.hunk": "ansicyan",
    "diff.added": "bg:#0f3a1a",
    "diff.removed": "bg:#4a1212",
    "diff.added-mark": "ansigreen bold",
    "diff.removed-mark": "ansired bold",
    "diff.context": "",
    "diff.note": "ansibrightblack italic",
    "diff.fold": "ansiyellow",
}


def diff_file_name(diff: str) -> str | None:
    """The file a unified diff changes (its ``+++`` header), or None."""
    match = _HEADER_FILE.search(diff)
    if match is None or match.group(1) == "/dev/null":
        return None
    return match.group(1)


def looks_like_diff(text: str) -> bool:
    return text.startswith(("--- ", "diff ")) or "\n@@ " in text or text.startswith("@@ ")


@lru_cache(maxsize=64)
def _lexer_for(name: str | None) -> Any:
    if not name:
        return None
    try:
        from pygments.lexers import get_lexer_for_filename
        from pygments.util import ClassNotFound
    except ImportError:  # pragma: no cover - rich depends on pygments
        return None
    try:
        return get_lexer_for_filename(name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


def _code(text: str, lexer: Any, base: str) -> StyleAndTextTuples:
    if lexer is None or not text:
        return [(base, text)]
    out: StyleAndTextTuples = []
    for token, value in lexer.get_tokens(text):
        if value:
            out.append((f"{base} {_token_class(token)}", value))
    return out


@lru_cache(maxsize=512)
def _token_class(token: Any) -> str:
    """A Pygments token as the class prompt_toolkit's Pygments styles name it."""
    return "class:pygments." + ".".join(token).lower() if token else "class:pygments"


def line_fragments(line: str, lexer: Any) -> StyleAndTextTuples:
    """One diff line as styled fragments (no newline)."""
    if line.startswith(("+++", "---")):
        return [("class:diff.header", line)]
    if line.startswith("@@"):
        return [("class:diff.hunk", line)]
    if line.startswith("\\") or line.startswith("[diff cut"):
        return [("class:diff.note", line)]
    if line.startswith("+"):
        return [
            ("class:diff.added-mark class:diff.added", "+"),
            *_code(line[1:], lexer, "class:diff.added"),
        ]
    if line.startswith("-"):
        return [
            ("class:diff.removed-mark class:diff.removed", "-"),
            *_code(line[1:], lexer, "class:diff.removed"),
        ]
    return _code(line, lexer, "class:diff.context")


def preview_lines(preview: str) -> tuple[list[str], Callable[[str], StyleAndTextTuples]]:
    """The preview's lines and how to style one of them (a diff, or plain text)."""
    lines = preview.rstrip("\n").split("\n")
    if looks_like_diff(preview):
        lexer = _lexer_for(diff_file_name(preview))
        return lines, lambda line: line_fragments(line, lexer)
    return lines, lambda line: [("class:summary", line)]


def clip(fragments: StyleAndTextTuples, width: int) -> StyleAndTextTuples:
    """Cut a line of fragments to ``width`` cells (``…`` marks the cut)."""
    from prompt_toolkit.utils import get_cwidth

    out: StyleAndTextTuples = []
    used = 0
    for style, text, *_ in fragments:
        size = get_cwidth(text)
        if used + size <= width:
            out.append((style, text))
            used += size
            continue
        room = max(width - used - 1, 0)
        piece = ""
        for char in text:
            if get_cwidth(piece + char) > room:
                break
            piece += char
        out.append((style, piece))
        out.append(("class:diff.note", "…"))
        break
    return out


def folded(
    preview: str, *, max_lines: int, width: int, indent: str = "  "
) -> tuple[StyleAndTextTuples, int]:
    """The first ``max_lines`` lines of the preview, styled and clipped to ``width``;
    returns the fragments (ending in a newline) and how many lines were left out."""
    lines, style = preview_lines(preview)
    shown = lines if len(lines) <= max_lines else lines[: max(max_lines, 1)]
    out: StyleAndTextTuples = []
    for line in shown:
        out.append(("", indent))
        out.extend(clip(style(line), max(width - len(indent), 10)))
        out.append(("", "\n"))
    return out, len(lines) - len(shown)


async def page(preview: str, title: str, back: str = "the question") -> None:
    """Show the whole preview (or a call's output) full screen; arrows, PgUp/PgDn,
    Home/End scroll; q, Esc or Enter go back (to ``back``)."""
    from prompt_toolkit.application import Application
    from prompt_toolkit.document import Document
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.layout import HSplit, Layout, Window
    from prompt_toolkit.layout.controls import FormattedTextControl
    from prompt_toolkit.lexers import Lexer
    from prompt_toolkit.styles import Style, merge_styles, style_from_pygments_cls
    from prompt_toolkit.widgets import TextArea
    from pygments.styles import get_style_by_name

    lines, style = preview_lines(preview)

    class _PreviewLexer(Lexer):
        def lex_document(self, document: Document) -> Callable[[int], StyleAndTextTuples]:
            doc_lines = document.lines
            return lambda number: style(doc_lines[number]) if number < len(doc_lines) else []

    area = TextArea(
        text="\n".join(lines),
        read_only=True,
        scrollbar=True,
        lexer=_PreviewLexer(),
        wrap_lines=False,
    )
    bindings = KeyBindings()

    @bindings.add("q", eager=True)
    @bindings.add("escape", eager=True)
    @bindings.add("enter", eager=True)
    def _back(event: Any) -> None:
        event.app.exit()

    def _rows(event: Any) -> int:
        return max(event.app.output.get_size().rows - 3, 1)

    @bindings.add("space")
    @bindings.add("pagedown")
    def _page_down(event: Any) -> None:
        area.buffer.cursor_down(count=_rows(event))

    @bindings.add("pageup")
    def _page_up(event: Any) -> None:
        area.buffer.cursor_up(count=_rows(event))

    @bindings.add("end")
    @bindings.add("G")
    def _end(event: Any) -> None:
        area.buffer.cursor_position = len(area.buffer.text)

    @bindings.add("home")
    @bindings.add("g")
    def _home(event: Any) -> None:
        area.buffer.cursor_position = 0

    header = FormattedTextControl([("class:diff.header", f" {title} · {len(lines)} lines")])
    footer = FormattedTextControl(
        [
            (
                "class:diff.note",
                f" ↑/↓ PgUp/PgDn Space Home/End scroll · q, Esc or Enter: back to {back}",
            )
        ]
    )
    layout = Layout(
        HSplit([Window(header, height=1), area, Window(footer, height=1)]), focused_element=area
    )
    style_obj = merge_styles(
        [style_from_pygments_cls(get_style_by_name("monokai")), Style.from_dict(DIFF_STYLE)]
    )
    app: Application[None] = Application(
        layout=layout, key_bindings=bindings, full_screen=True, style=style_obj, mouse_support=False
    )
    await app.run_async(handle_sigint=False)  # keep the shell's SIGINT handler
