"""A session's checkpoint history, read back from its records.

Every record of the ``checkpoints`` collection is one of:

* ``turn``: a prompt started a turn (its message id, so turns can be listed with a time);
* ``pre`` / ``post``: the workspace right before and right after one mutating call
  (a *window*: what changed inside it is ketch's doing; what changed between windows
  was someone else's);
* ``undo``: paths put back to before some turns (``via`` undo or rewind), with both
  states of each, so that ``redo`` can put them forward again;
* ``redo``: an undo taken back;
* ``note``: something the model must be told at its next prompt (a rewound conversation
  whose files were kept).

From them: which turns are applied or undone, what can be redone, and what the model
has not been told yet.

Paths are kept as the OS gives them; a name whose bytes are not UTF-8 is stored in
its lossless portable form (``ketch_text_kit.names.portable``) and read back exact.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ketch_store_kit.protocols import BlobRecord
from ketch_text_kit.names import from_portable, portable

COLLECTION = "checkpoints"


def portable_record(data: Any) -> Any:
    """A record with every path (every string) in a form JSON and the store can hold."""
    if isinstance(data, str):
        return portable(data)
    if isinstance(data, dict):
        return {key: portable_record(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [portable_record(value) for value in data]
    return data


def native_record(data: Any) -> Any:
    """The record as written (:func:`portable_record` undone)."""
    if isinstance(data, str):
        return from_portable(data)
    if isinstance(data, dict):
        return {key: native_record(value) for key, value in data.items()}
    if isinstance(data, list):
        return [native_record(value) for value in data]
    return data


@dataclass
class Window:
    turn: str
    call: str
    tool: str
    pre_seq: int
    pre_root: str
    ts: float
    post_seq: int | None = None
    post_root: str | None = None
    post_ts: float | None = None
    changed: list[str] = field(default_factory=list)  # every path, directories included
    files: list[str] = field(default_factory=list)  # the files and links among them

    @property
    def closed(self) -> bool:
        return self.post_root is not None


@dataclass
class Action:
    seq: int
    kind: str  # undo | redo | note
    ts: float
    data: dict[str, Any]

    @property
    def turns(self) -> list[str]:
        return list(self.data.get("turns") or [])


@dataclass
class Timeline:
    windows: list[Window] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    turn_times: dict[str, float] = field(default_factory=dict)
    undone: set[str] = field(default_factory=set)
    redo_stack: list[Action] = field(default_factory=list)
    last_seq: int = 0

    @classmethod
    def read(cls, records: Iterable[BlobRecord]) -> Timeline:
        line = cls()
        open_calls: dict[str, Window] = {}
        for record in records:
            data = native_record(record.data)
            kind = data.get("kind")
            line.last_seq = record.seq
            if kind == "turn":
                line.turn_times.setdefault(data["turn"], record.ts)
            elif kind == "pre":
                window = Window(
                    data["turn"],
                    data["call"],
                    data.get("tool", ""),
                    record.seq,
                    data["root"],
                    record.ts,
                )
                line.windows.append(window)
                open_calls[data["call"]] = window
            elif kind == "post":
                found: Window | None = open_calls.pop(data["call"], None)
                if found is None:
                    continue
                window = found
                window.post_seq, window.post_root, window.post_ts = (
                    record.seq,
                    data["root"],
                    record.ts,
                )
                window.changed = list(data.get("changed") or [])
                window.files = list(data.get("changed_files") or window.changed)
                if window.changed and line.redo_stack:
                    line.redo_stack.clear()  # new changes: what was undone before stays undone
            elif kind in ("undo", "redo", "note"):
                action = Action(record.seq, kind, record.ts, data)
                line.actions.append(action)
                if kind == "undo":
                    line.undone.update(action.turns)
                    line.redo_stack.append(action)
                elif kind == "redo":
                    line.undone.difference_update(action.turns)
                    line.redo_stack = [a for a in line.redo_stack if a.seq != data.get("undo")]
        return line

    # --- questions ------------------------------------------------------------------------

    def changed_turns(self) -> list[str]:
        """Turns that changed something, in order."""
        seen: dict[str, None] = {}
        for window in self.windows:
            if window.changed:
                seen.setdefault(window.turn, None)
        return list(seen)

    def applied(self) -> list[str]:
        return [t for t in self.changed_turns() if t not in self.undone]

    def windows_of(self, turns: Iterable[str]) -> list[Window]:
        wanted = set(turns)
        return [w for w in self.windows if w.turn in wanted and w.closed and w.changed]

    def changed_by(self, turn: str) -> list[str]:
        """The files (and links) a turn changed, in order."""
        paths: dict[str, None] = {}
        for window in self.windows:
            if window.turn == turn:
                paths.update(dict.fromkeys(window.files))
        return list(paths)

    def unclosed(self, turns: Iterable[str]) -> list[Window]:
        """Calls of these turns whose after-state was never recorded (ketch stopped)."""
        wanted = set(turns)
        return [w for w in self.windows if w.turn in wanted and not w.closed]

    def redoable(self) -> Action | None:
        return self.redo_stack[-1] if self.redo_stack else None

    def notes_after(self, seq: int) -> list[Action]:
        """Undos, redos and notes the model has not been told about."""
        return [a for a in self.actions if a.seq > seq and a.data.get("tell")]
