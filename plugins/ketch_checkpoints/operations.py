"""Undo, redo and rewind: what the shell's commands and ``ketch sessions`` share.

Each returns a plain dict (what ``--json`` prints) and records what it did, so that the
next one (in this process or another) knows: which turns are undone, what can be redone,
and what the model must be told at its next prompt (``tell``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.api import History, KetchError
from ketch_checkpoints.restore import (
    Change,
    Confirm,
    Outcome,
    Report,
    Workspace,
    apply,
    plan_redo,
    plan_undo,
)
from ketch_checkpoints.timeline import COLLECTION, Timeline, Window, portable_record
from ketch_checkpoints.tree import Entry, Trees
from ketch_context_kit.turns import prompt_numbers
from ketch_text_kit.names import shown_name

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session
    from ketch_store_kit.protocols import BlobStore


@dataclass
class Target:
    """One session, as the operations see it (live in this process or only stored)."""

    blobs: BlobStore
    session_id: str
    workspace: Path
    transcript: History
    rewound: set[str]
    max_file_size: int
    trees: Trees | None = None
    live: Session | None = None  # the session running in this process, if it is
    store: Any = None  # for a stored session's conversation rewind (append_event)
    record: Any = None  # ... and its SessionRecord
    numbers: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.trees = self.trees or Trees(self.blobs)
        self.numbers = prompt_numbers(self.transcript)

    def timeline(self) -> Timeline:
        return Timeline.read(self.blobs.records(self.session_id, COLLECTION))

    def prompt_text(self, turn: str) -> str:
        return next((m.text for m in self.transcript if m.id == turn), "")

    def neighbours(self) -> list[tuple[str, Window]]:
        """The windows of the workspace's other sessions that changed something."""
        lister = getattr(self.store, "list_sessions", None)
        if lister is None:
            return []
        out = []
        for summary in lister(str(self.workspace)):
            if summary.id != self.session_id:
                line = Timeline.read(self.blobs.records(summary.id, COLLECTION))
                out += [(summary.id, w) for w in line.windows if w.changed]
        return out

    def label(self, turn: str) -> str:
        n = self.numbers.get(turn)
        return f"turn {n}" if n else "an earlier turn"


def _entry(entry: Entry | None) -> list[Any] | None:
    return None if entry is None else entry.as_json()


def _refs(outcomes: list[Outcome]) -> list[str]:
    return sorted(
        {
            e.ref
            for o in outcomes
            for e in (o.target, o.expected)
            if e is not None and e.kind == "f" and e.ref
        }
    )


def _summary(report: Report) -> dict[str, Any]:
    groups = {
        "restored": "restored",
        "unchanged": "already",
        "conflicts": "conflict",
        "kept": "kept",
        "skipped": "skipped",
        "failed": "failed",
    }
    return {key: [o.as_dict() for o in report.of(status)] for key, status in groups.items()}


def _record(target: Target, kind: str, data: dict[str, Any], refs: list[str]) -> int:
    record = portable_record({"kind": kind, **data})
    return target.blobs.add_record(target.session_id, COLLECTION, record, refs)


def _short(paths: list[str], limit: int = 12) -> str:
    shown = ", ".join(shown_name(path) for path in paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


async def _revert(
    target: Target,
    line: Timeline,
    turns: list[str],
    *,
    via: str,
    force: bool,
    keep_changed: bool,
    confirm: Confirm | None,
    tell: bool,
) -> dict[str, Any]:
    windows = line.windows_of(turns)
    assert target.trees is not None
    changes = plan_undo(windows, target.trees)
    _mark_concurrent(changes, windows, target.neighbours())
    report = await _restore(
        target, changes, force=force, confirm=confirm, keep_changed=keep_changed
    )
    warnings = [
        f"{target.label(w.turn)}: ketch stopped before the after-state of {w.tool or 'a call'} was recorded; what it changed is left as it is"
        for w in line.unclosed(turns)
    ]
    out: dict[str, Any] = {
        "turns": [target.numbers.get(t) for t in turns],
        "ok": not report.stopped and not report.of("failed"),
        "stopped": report.stopped,
        **_summary(report),
        "warnings": warnings,
    }
    if report.stopped:
        return out
    if report.outcomes and not report.of("restored", "already"):
        out["ok"] = False  # nothing could be put back: not recorded, so it can be tried again
        return out
    paths = [
        {"path": o.path, "status": o.status, "from": _entry(o.expected), "to": _entry(o.target)}
        for o in report.outcomes
    ]
    restored = [o.path for o in report.restored]
    note = ""
    if tell and restored:
        labels = ", ".join(target.label(t) for t in turns)
        note = f"[ketch] The user reverted the file changes of {labels} ({via}); these are back to how they were before: {_short(restored)}. Read them again before relying on what you remember of them."
    out["seq"] = _record(
        target,
        "undo",
        {"turns": turns, "via": via, "paths": paths, "forced": force, "tell": note},
        _refs(report.outcomes),
    )
    return out


def _mark_concurrent(
    changes: list[Change], windows: list[Window], neighbours: list[tuple[str, Window]]
) -> None:
    """A path another ketch session changed while one of these calls ran is not only this
    session's doing: putting it back would undo the other session's change too."""
    now = time.time()

    def overlap(a: Window, b: Window) -> bool:
        return a.ts <= (b.post_ts or now) and b.ts <= (a.post_ts or now)

    for change in changes:
        ours = [w for w in windows if change.path in w.changed]
        other = next(
            (
                sid
                for sid, w in neighbours
                if change.path in w.changed and any(overlap(o, w) for o in ours)
            ),
            None,
        )
        if other is not None:
            change.between, change.why = (
                True,
                f"also changed by ketch session {other} while this one's call ran",
            )


async def _restore(target: Target, changes: list[Change], **options: Any) -> Report:
    workspace = Workspace(target.workspace, target.blobs, target.max_file_size)
    try:
        return await apply(workspace, changes, **options)
    finally:
        workspace.close()


def _nothing(action: str, why: str) -> dict[str, Any]:
    return {
        "action": action,
        "ok": False,
        "nothing": True,
        "message": f"nothing to {action}: {why}",
    }


async def undo(
    target: Target,
    *,
    force: bool = False,
    keep_changed: bool = False,
    confirm: Confirm | None = None,
) -> dict[str, Any]:
    """Revert the latest turn whose changes are still applied."""
    line = target.timeline()
    applied = line.applied()
    if not applied:
        return _nothing("undo", "no turn of this session changed files that are not undone already")
    turn = applied[-1]
    out = await _revert(
        target,
        line,
        [turn],
        via="/undo",
        force=force,
        keep_changed=keep_changed,
        confirm=confirm,
        tell=True,
    )
    return {
        "action": "undo",
        "turn": target.numbers.get(turn),
        "prompt": target.prompt_text(turn),
        **out,
    }


async def redo(
    target: Target,
    *,
    force: bool = False,
    keep_changed: bool = False,
    confirm: Confirm | None = None,
) -> dict[str, Any]:
    """Put forward again what the latest undo put back (until new changes were made)."""
    line = target.timeline()
    action = line.redoable()
    if action is None:
        return _nothing("redo", "no undo since the last change")
    report = await _restore(
        target, plan_redo(action.data), force=force, confirm=confirm, keep_changed=keep_changed
    )
    turns = action.turns
    out: dict[str, Any] = {
        "action": "redo",
        "turns": [target.numbers.get(t) for t in turns],
        "ok": not report.stopped and not report.of("failed"),
        "stopped": report.stopped,
        **_summary(report),
    }
    if not report.stopped:
        restored = [o.path for o in report.restored]
        labels = ", ".join(target.label(t) for t in turns)
        note = (
            f"[ketch] The user re-applied the file changes of {labels} (/redo): {_short(restored)}."
            if restored
            else ""
        )
        paths = [{"path": o.path, "status": o.status} for o in report.outcomes]
        out["seq"] = _record(
            target, "redo", {"undo": action.seq, "turns": turns, "paths": paths, "tell": note}, []
        )
    return out


async def rewind(
    target: Target,
    turn_number: int,
    *,
    code: bool = True,
    conversation: bool = True,
    force: bool = False,
    keep_changed: bool = False,
    confirm: Confirm | None = None,
) -> dict[str, Any]:
    """Restore the state before turn ``turn_number``: that turn and every later one are
    undone in the files (``code``) and/or left out of the conversation."""
    prompt = next((i for i, n in target.numbers.items() if n == turn_number), None)
    total = len(target.numbers)
    if prompt is None:
        raise KetchError(
            f"there is no turn {turn_number} in session {target.session_id} (it has {total}; `ketch sessions show` numbers them)",
            exit_code=2,
        )
    if conversation and prompt in target.rewound:
        raise KetchError(
            f"turn {turn_number} is rewound already: the conversation does not hold it any more",
            exit_code=2,
        )
    line = target.timeline()
    later = [t for t in line.applied() if target.numbers.get(t, 0) >= turn_number]
    out: dict[str, Any] = {
        "action": "rewind",
        "turn": turn_number,
        "prompt": target.prompt_text(prompt),
        "ok": True,
        "code": None,
        "conversation": None,
    }
    if code:
        if later:
            result = await _revert(
                target,
                line,
                later,
                via=f"rewind to before turn {turn_number}",
                force=force,
                keep_changed=keep_changed,
                confirm=confirm,
                tell=not conversation,
            )
            out["code"] = result
            if not result["ok"]:
                out["ok"] = False
                if result["stopped"]:
                    return out  # nothing changed: the conversation stays as it is too
        else:
            out["code"] = {
                "turns": [],
                "restored": [],
                "message": f"no file changes to revert from turn {turn_number} on",
            }
    if conversation:
        out["conversation"] = _rewind_conversation(target, prompt)
        if not code:
            kept = sorted({p for t in later for p in line.changed_by(t)})
            if kept:
                note = (
                    f"[ketch] The conversation was rewound to before turn {turn_number}, but the files were not: they still have "
                    f"the changes made from that turn on: {_short(kept)}. Read them before relying on them."
                )
                _record(target, "note", {"turns": later, "tell": note}, [])
                out["conversation"]["files_kept"] = [shown_name(p) for p in kept]
    return out


def _rewind_conversation(target: Target, prompt: str) -> dict[str, Any]:
    from ketch_checkpoints.conversation import RewindEvent, rewind, rewind_context

    if target.live is not None:
        event = rewind(target.live, prompt)
    else:
        from ketch_context_kit.compaction import records

        record = target.record
        append = getattr(target.store, "append_event", None)
        if record is None or append is None:
            raise KetchError("this session store cannot record a rewound conversation")
        active, cut = rewind_context(
            record.transcript,
            record.active if record.active is not None else record.transcript,
            records(record.state),
            target.rewound,
            prompt,
        )
        event = RewindEvent(
            message_id=prompt, rewound=cut, active=[m.id for m in active], ts=time.time()
        )
        append(target.session_id, event)
    rewound = set(event.rewound)
    return {
        "rewound_turns": sorted(n for i, n in target.numbers.items() if i in rewound),
        "active_messages": len(event.active),
    }


def turn_rows(target: Target) -> list[dict[str, Any]]:
    """Every turn: number, prompt, when, files changed, whether its changes are undone
    and whether the conversation still holds it (for /rewind and ``--json``)."""
    line = target.timeline()
    rows = []
    for message in target.transcript:
        n = target.numbers.get(message.id)
        if n is None:
            continue
        changed = [shown_name(p) for p in line.changed_by(message.id)]
        rows.append(
            {
                "n": n,
                "message_id": message.id,
                # What the person typed: the first text part, not the attachments after it.
                "prompt": next((p.text for p in message.parts if p.type == "text"), ""),
                "ts": line.turn_times.get(message.id),
                "files_changed": changed,
                "undone": message.id in line.undone,
                "rewound": message.id in target.rewound,
            }
        )
    return rows
