"""Telling the person ketch is waiting for them, when they are looking elsewhere.

The terminal is asked to report focus (``CSI ? 1004 h``): it then sends ``CSI I`` when
the window gains focus and ``CSI O`` when it loses it (xterm, iTerm2, kitty, WezTerm,
Ghostty, foot, GNOME Terminal, Windows Terminal, tmux with ``focus-events on``). When a
turn ends or an approval waits while the terminal is not focused, the shell rings the
bell and, where the terminal shows desktop notifications for it, sends one (OSC 9,
or OSC 777 on VTE terminals), and runs the ``ketch_notification`` hook (user hooks on
``Notification``). ``[interactive] notify`` = ``"auto"`` (the default: only when the
terminal said it lost focus), ``"always"`` or ``"off"``; ``notify_escape`` =
``"auto"``, ``"bell"``, ``"osc9"`` or ``"osc777"``.

A terminal that does not report focus never gets a notification in ``auto``: ketch
cannot tell you are away, and a bell after every turn would be noise.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Mapping
from typing import Any

ENABLE, DISABLE = "\x1b[?1004h", "\x1b[?1004l"
FOCUS_IN, FOCUS_OUT = "\x1b[I", "\x1b[O"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
OSC9_TERMINALS = frozenset({"iTerm.app", "WezTerm", "ghostty", "kitty"})


class Focus:
    """What the terminal last said about focus: True, False, or None (it never said)."""

    def __init__(self) -> None:
        self.focused: bool | None = None


def teach_parser() -> tuple[Any, Any]:
    """Make prompt_toolkit read the focus reports as two keys (F23 in, F24 out) instead
    of typing ``[I`` into the line; returns those keys for binding."""
    from prompt_toolkit.input.ansi_escape_sequences import ANSI_SEQUENCES
    from prompt_toolkit.keys import Keys

    ANSI_SEQUENCES[FOCUS_IN] = Keys.F23
    ANSI_SEQUENCES[FOCUS_OUT] = Keys.F24
    return Keys.F23, Keys.F24


def _write(text: str) -> None:
    """Straight to the terminal: these sequences move no cursor, so they can go out while
    a prompt is drawn (the patched stdout would print them above it as text)."""
    stream = sys.__stdout__
    if stream is None or not stream.isatty():
        return
    with contextlib.suppress(OSError):
        os.write(stream.fileno(), text.encode("utf-8", "replace"))


def report_focus(on: bool) -> None:
    _write(ENABLE if on else DISABLE)


def escape_for(setting: str, environ: Mapping[str, str]) -> str:
    """Which desktop-notification escape this terminal understands ("bell": none)."""
    if setting in ("bell", "osc9", "osc777"):
        return setting
    if environ.get("TERM_PROGRAM") in OSC9_TERMINALS or environ.get("KITTY_WINDOW_ID"):
        return "osc9"
    if environ.get("VTE_VERSION") or environ.get("TERM_PROGRAM") == "foot":
        return "osc777"
    return "bell"


def sequence(message: str, escape: str) -> str:
    """The bell, and the notification escape for ``message`` (control characters removed)."""
    text = _CONTROL.sub(" ", message)[:200]
    if escape == "osc9":
        return f"\x07\x1b]9;{text}\x07"
    if escape == "osc777":
        return f"\x07\x1b]777;notify;ketch;{text}\x07"
    return "\x07"


def should_notify(setting: str, focus: Focus) -> bool:
    if setting == "off":
        return False
    if setting == "always":
        return True
    return focus.focused is False


def ring(message: str, escape: str) -> None:
    _write(sequence(message, escape))
