"""The session a frontend opens for the command line."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Event, Kernel, Session


def open_session(kernel: Kernel, listeners: list[Callable[[Event], None]] | None = None) -> Session:
    """The session the command line asks for: ``--resume ID``, ``--continue``, or a new one."""
    resume = getattr(kernel.args, "resume", None)
    if resume:
        return kernel.resume_session(resume, listeners=listeners)
    if getattr(kernel.args, "continue_session", False):
        return kernel.resume_session(None, listeners=listeners)
    return kernel.new_session(listeners=listeners)
