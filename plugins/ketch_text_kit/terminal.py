"""Text from the model or a tool, made safe to write to a terminal: one sanitiser.

A terminal obeys what it is sent. An escape sequence in a model's answer can set the
window title (OSC 0), write the clipboard (OSC 52), clear the screen (CSI 2J), move the
cursor to overwrite what was shown, or hide text; a carriage return can overwrite a
line; bidirectional overrides reorder it. None of that may reach the person's terminal
from text ketch did not write itself.

:func:`for_terminal` keeps printable text, newlines and tabs, and shows everything
else visibly instead of obeying it: ``ESC ] 0 ; x BEL`` becomes ``\\x1b]0;x\\x07``,
a lone CR ``\\r``, a bidi override ``\\u202e``. Nothing is dropped silently, so the
person can see that something tried. Undecodable bytes from a file name (surrogate
escapes) are shown as ``\\xNN``.
"""

from __future__ import annotations

import re
from typing import Any

# C0 controls except TAB and LF, DEL, C1 controls (0x80-0x9F: 0x9B is an 8-bit CSI),
# bidirectional controls, and lone surrogates (undecodable bytes of a file name).
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the byte that was not UTF-8
        return f"\\x{code - 0xDC00:02x}"
    if char == "\r":
        return "\\r"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def for_terminal(text: str) -> str:
    """``text`` with every control sequence shown instead of obeyed (newlines and tabs
    kept; ``\\r\\n`` read as a newline)."""
    if text.isprintable() and text.isascii():
        return text
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return _UNSAFE.sub(_visible, text)


def line_for_terminal(text: str) -> str:
    """The same for text that must stay on one line (a tool name, a status): newlines
    and tabs are shown too."""
    return for_terminal(text).replace("\n", "\\n").replace("\t", "\\t")


def data_for_terminal(value: Any) -> Any:
    """Every string in ``value`` (nested in dicts and lists too) through
    :func:`for_terminal`; anything else as it is."""
    if isinstance(value, str):
        return for_terminal(value)
    if isinstance(value, dict):
        return {key: data_for_terminal(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(data_for_terminal(item) for item in value)
    return value


def event_for_terminal(event: Any) -> Any:
    """A copy of a (pydantic) event whose text fields are safe to render on a terminal
    (anything that is not a pydantic model comes back as it is)."""
    if not hasattr(event, "model_copy"):
        return event
    changed = {
        name: data_for_terminal(value)
        for name, value in event
        if isinstance(value, str | dict | list | tuple)
    }
    return event.model_copy(update=changed) if changed else event
