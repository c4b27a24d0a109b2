"""Frontends: what runs a session for a person (interactive shell) or a script (headless)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # pragma: no cover
    from ketch.kernel import Kernel


@dataclass
class Frontend:
    """A named frontend. ``run(kernel) -> exit code``; options are in ``kernel.args``.

    ``role`` says when the CLI picks it without ``--frontend``: ``"prompt"`` for a
    headless turn (``-p PROMPT`` or a prompt piped on stdin), ``"terminal"`` for an
    interactive terminal; None for a frontend chosen only by name (``ketch acp``).
    """

    name: str
    run: Callable[[Kernel], int]
    help: str = ""
    role: Literal["prompt", "terminal"] | None = None
    plugin: str = field(default="", compare=False)
