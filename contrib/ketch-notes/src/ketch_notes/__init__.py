"""ketch-notes: notes about the workspace for the model, from every plugin that
implements the ``notes_sources`` hook this plugin declares (``hookspecs.py``).

The entry module is hooks only: the standard library and ``ketch.api``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ketch.api import hookimpl


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_notes import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def collect(kernel: Any) -> list[tuple[str, str]]:
    """(plugin, note) for every note every implementation gave, in call order."""
    found: list[tuple[str, str]] = []
    for answer in kernel.hooks.call("notes_sources", kernel=kernel):
        found += [(answer.plugin, " ".join(str(n).split())) for n in answer.value if str(n).strip()]
    return found


@hookimpl
def ketch_system_prompt(session: Any) -> Any:
    notes = collect(session.kernel)
    if not notes:
        return None
    from ketch.api import PromptPart

    return PromptPart(
        text="\n".join(f"- {note}" for _, note in notes),
        title="Notes about this workspace",
        order=300,
        source="notes",
    )


def _run(kernel: Any, args: Any) -> int:
    notes = collect(kernel)
    for plugin, note in notes:
        print(f"{plugin}: {note}")
    if not notes:
        print("no notes (no installed plugin implements notes_sources, or none had any)")
    return 0


@hookimpl
def ketch_register_commands(register: Callable[[Any], None]) -> None:
    from ketch.api import Command

    register(
        Command(name="notes", help="list the notes plugins give the model", cli=True, run=_run)
    )
