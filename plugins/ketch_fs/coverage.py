"""The read-coverage guard: no overwriting or editing what the model has not seen.

Overwriting or editing an existing file is refused unless reads in this session showed
every one of its lines in full, and refused again when the file changed on disk since
(a different size or SHA-256; an mtime change alone with identical bytes is not a
change). Creating a new file needs no read. A write by these tools counts as a full
read of the result, since the model knows what it wrote.

The record lives in the session's plugin state (``ctx.plugin_state("fs")``), as plain
JSON-able data so that a resumed session keeps it (a stale record is caught by the
fingerprint anyway).

Each record names the turn it was made in (``state["turn"]``, set as each prompt
arrives) and keeps the record it replaced, so a rewind of the conversation to before
turn N (:func:`rewind`) puts back what the model had seen before turn N: after
``/rewind`` restored the files too, the model's identical edit is allowed again; after
a conversation-only rewind, the files it changed are "changed on disk" again, as they
are to what the model now remembers.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch_text_kit.names import portable

if TYPE_CHECKING:  # pragma: no cover - the turn counter (every prompt) needs no file reading
    from ketch_fs.reading import Fingerprint

MAX_RECORDS = 2000
MAX_VERSIONS = 8  # earlier records kept per path, for rewinds


def merge(intervals: Iterable[tuple[int, int]]) -> list[list[int]]:
    """Merge inclusive integer intervals ([1,3] and [4,6] become [1,6])."""
    out: list[list[int]] = []
    for start, end in sorted((int(a), int(b)) for a, b in intervals if a <= b):
        if out and start <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def missing(intervals: list[list[int]], total: int) -> list[tuple[int, int]]:
    """The ranges of 1..total not covered."""
    gaps: list[tuple[int, int]] = []
    cursor = 1
    for start, end in intervals:
        if start > cursor:
            gaps.append((cursor, min(start - 1, total)))
        cursor = max(cursor, end + 1)
        if cursor > total:
            break
    if cursor <= total:
        gaps.append((cursor, total))
    return [(a, b) for a, b in gaps if a <= b]


def spans(numbers: Iterable[int]) -> list[tuple[int, int]]:
    """Consecutive runs of line numbers."""
    runs: list[tuple[int, int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    return runs


def _records(state: dict[str, Any]) -> dict[str, Any]:
    records = state.setdefault("reads", {})
    if len(records) > MAX_RECORDS:
        for key in list(records)[: len(records) - MAX_RECORDS]:
            del records[key]
    return records  # type: ignore[no-any-return]


def _key(path: Path) -> str:
    """The record's key: the path, kept exactly even when its bytes are not UTF-8 (the
    records are saved with the session)."""
    return portable(str(path))


def _same(record: dict[str, Any], fp: Fingerprint) -> bool:
    return record.get("size") == fp.size and record.get("sha256") == fp.sha256


def _store(state: dict[str, Any], key: str, record: dict[str, Any], previous: Any) -> None:
    """Put ``record`` for ``key`` (most recent at the end), keeping the one it replaces
    unless that was made in the same turn (a rewind goes back to turns, not calls)."""
    turn = int(state.get("turn", 0))
    record["turn"] = turn
    if isinstance(previous, dict):
        earlier = previous if previous.get("turn", 0) != turn else previous.get("previous")
        if isinstance(earlier, dict):
            record["previous"] = _trimmed(earlier, MAX_VERSIONS - 1)
    _records(state)[key] = record


def _trimmed(record: dict[str, Any], depth: int) -> dict[str, Any]:
    if depth <= 0:
        return {k: v for k, v in record.items() if k != "previous"}
    inner = record.get("previous")
    return {**record, "previous": _trimmed(inner, depth - 1)} if isinstance(inner, dict) else record


def record_read(
    state: dict[str, Any],
    path: Path,
    fp: Fingerprint,
    total_lines: int,
    shown: Iterable[tuple[int, int]],
) -> None:
    records = _records(state)
    key = _key(path)
    previous = records.pop(key, None)  # re-inserted last: most recent at the end
    covered: list[tuple[int, int]] = list(shown)
    if previous and _same(previous, fp):
        covered += [tuple(iv) for iv in previous.get("covered", [])]  # type: ignore[misc]
    _store(state, key, {**fp.as_dict(), "lines": total_lines, "covered": merge(covered)}, previous)


def record_written(state: dict[str, Any], path: Path, fp: Fingerprint, total_lines: int) -> None:
    records = _records(state)
    key = _key(path)
    previous = records.pop(key, None)
    record = {
        **fp.as_dict(),
        "lines": total_lines,
        "covered": [[1, total_lines]] if total_lines else [],
        "written": True,
    }
    _store(state, key, record, previous)


def start_turn(state: dict[str, Any], number: int) -> None:
    """A prompt arrived: records from now on belong to turn ``number``."""
    state["turn"] = number


def rewind(state: dict[str, Any], number: int) -> int:
    """The conversation went back to before turn ``number``: every path's record is what
    it was before that turn (or none). Returns how many paths changed."""
    records = _records(state)
    changed = 0
    for key in list(records):
        record = records[key]
        if int(record.get("turn", 0)) < number:
            continue
        while isinstance(record, dict) and int(record.get("turn", 0)) >= number:
            record = record.get("previous")
        changed += 1
        if isinstance(record, dict):
            records[key] = record
        else:
            del records[key]
    return changed


def forget(state: dict[str, Any], path: Path) -> None:
    _records(state).pop(_key(path), None)


def _ranges_text(ranges: list[tuple[int, int]], limit: int = 4) -> str:
    parts = [f"{a}-{b}" if a != b else str(a) for a, b in ranges[:limit]]
    if len(ranges) > limit:
        parts.append(f"and {len(ranges) - limit} more range(s)")
    return ", ".join(parts)


def check(
    state: dict[str, Any], path: Path, shown_as: str, fp: Fingerprint, total_lines: int
) -> str | None:
    """Why overwriting/editing this existing file is refused, or None when allowed."""
    record = _records(state).get(_key(path))
    if record is None:
        return (
            f"{shown_as} exists and you have not read it in this session, so it was not changed. "
            f"Read it with read_file first (all {total_lines} lines), then try again."
        )
    if not _same(record, fp):
        was, now = record.get("size"), fp.size
        detail = (
            f"its size went from {was} to {now} bytes" if was != now else "its content is different"
        )
        return (
            f"{shown_as} changed on disk since you last read it ({detail}), so it was not changed. "
            "Read it again and redo your change against what it holds now."
        )
    gaps = missing(record.get("covered", []), total_lines)
    if gaps:
        return (
            f"you have not seen all of {shown_as} ({total_lines} lines): lines {_ranges_text(gaps)} were never shown "
            "to you in full (not read yet, or cut because they are very long), so it was not changed. "
            "Read those lines with read_file (offset/limit) first, then try again."
        )
    return None
