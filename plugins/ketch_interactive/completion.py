"""Completion at the shell prompt: ``/commands`` (with their argument hint and source)
at the start of a line, and ``@paths`` anywhere, as they are typed.

Paths complete relative to the workspace (``~/`` and absolute paths too); hidden
entries show only once a ``.`` is typed, and ``.git`` never. At most 50 entries.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from ketch_prompt_kit.mentions import typing_mention

MAX_ENTRIES = 50


class ShellCompleter(Completer):
    def __init__(self, workspace: Path, commands: Callable[[], list[tuple[str, str]]]) -> None:
        self.workspace = workspace
        self.commands = commands  # (name with "/", what to show beside it)

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        before = document.text_before_cursor
        partial = typing_mention(before)
        if partial is not None:
            quoted = before.endswith('@"' + partial)
            yield from self._paths(partial, quoted)
            return
        stripped = before.lstrip()
        if stripped.startswith("/") and " " not in stripped and "\n" not in before:
            for name, meta in self.commands():
                if name.startswith(stripped):
                    yield Completion(name, start_position=-len(stripped), display_meta=meta)

    def _paths(self, partial: str, quoted: bool) -> Iterable[Completion]:
        head, slash, prefix = partial.rpartition("/")
        folder = head + slash  # what is typed of the directory, "/" kept
        if folder.startswith("~"):
            directory = Path(os.path.expanduser(folder or "."))
        elif os.path.isabs(folder):
            directory = Path(folder)
        else:
            directory = self.workspace / folder
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return
        shown = 0
        for entry in entries:
            name = entry.name
            if (
                name == ".git"
                or (name.startswith(".") and not prefix.startswith("."))
                or not name.startswith(prefix)
            ):
                continue
            is_dir = _is_dir(entry)
            shown_name = name + ("/" if is_dir else "")
            if quoted or " " in name:  # a quoted mention: replace all of it, quote and path
                text = '"' + folder + shown_name + ("" if is_dir else '"')
                start = -(len(partial) + (1 if quoted else 0))
            else:
                text, start = shown_name, -len(prefix)
            yield Completion(
                text, start_position=start, display=shown_name, display_meta="dir" if is_dir else ""
            )
            shown += 1
            if shown >= MAX_ENTRIES:
                return


def _is_dir(entry: Any) -> bool:
    try:
        return bool(entry.is_dir())
    except OSError:
        return False
