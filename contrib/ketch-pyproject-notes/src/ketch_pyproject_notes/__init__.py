"""ketch-pyproject-notes: notes about a Python project for ketch-notes.

It implements ``notes_sources``, the hook the ``notes`` plugin declares, and imports
nothing from it: marked ``optionalhook``, it loads (and is never called) where
ketch-notes is not installed or is disabled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ketch.api import hookimpl


@hookimpl(optionalhook=True)
def notes_sources(kernel: Any) -> list[str] | None:
    from ketch_pyproject_notes.project import notes

    return notes(Path(kernel.workspace))
