"""Frontends: what runs a session for a person (interactive shell) or a script (headless)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ketch.kernel import Kernel


@dataclass
class Frontend:
    """A named frontend. ``run(kernel) -> exit code``; options are in ``kernel.args``."""

    name: str
    run: Callable[[Kernel], int]
    help: str = ""
    plugin: str = field(default="", compare=False)
