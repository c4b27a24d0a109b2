"""The journal's MAC chain, and what a broken one means.

Entry ``n`` of a session carries ``mac_n = MAC(session, n, kind, event id, timestamp,
sealed payload, mac_{n-1})`` under a subkey of the data key (``journal-chain``); the
session row carries ``head = MAC(session, last sequence number, mac_last)``. Each
payload is also sealed with its session, sequence number, kind and event id as AAD.
Together:

* a deleted entry leaves a gap in the sequence and breaks the next link;
* a cut-off tail (truncation) leaves the head pointing past the last entry;
* entries swapped (reordered) or an old one inserted again (replayed) fail the AAD of
  the place they are in, and the classifier finds the place they were written for;
* an entry copied from another session fails the AAD of this one;
* an altered timestamp, kind or MAC breaks the link.

What it cannot see: the whole database (or a whole session, head included) put back to
an earlier copy of itself. That needs state kept outside the database.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from ketch.api import IntegrityError

CHAIN = "journal-chain"
HEAD = "journal-head"
_CLASSIFY_LIMIT = 20_000  # decryption attempts spent naming one broken entry


_LEN = struct.Struct(">I").pack
_NUMBER = struct.Struct(">Iq").pack  # a framed 8-byte sequence number
_TIME = struct.Struct(">Id").pack  # a framed 8-byte timestamp
_LINK_TAG = _LEN(16) + b"ketch/journal/v1"


def _frame(*parts: bytes) -> bytes:
    return b"".join(_LEN(len(p)) + p for p in parts)


def link_input(
    session_id: str, seq: int, kind: str, event_id: str, ts: float, payload: bytes, prev: bytes
) -> bytes:
    """What entry ``seq``'s link authenticates: each part length-prefixed (:func:`_frame`),
    written out because it runs once per entry on every load."""
    sid, k, e = session_id.encode(), kind.encode(), event_id.encode()
    return b"".join(
        (
            _LINK_TAG,
            _LEN(len(sid)),
            sid,
            _NUMBER(8, seq),
            _LEN(len(k)),
            k,
            _LEN(len(e)),
            e,
            _TIME(8, ts),
            _LEN(len(payload)),
            payload,
            _LEN(len(prev)),
            prev,
        )
    )


def head_input(session_id: str, last_seq: int, last_mac: bytes) -> bytes:
    return _frame(
        b"ketch/journal-head/v1", session_id.encode(), struct.pack(">q", last_seq), last_mac
    )


@dataclass
class Row:
    seq: int
    event_id: str
    kind: str
    ts: float
    payload: bytes
    mac: bytes | None


@dataclass
class Report:
    """What checking one session found. ``problems`` empty: the session is intact."""

    session_id: str
    entries: int = 0
    fields: int = 0
    problems: list[str] = field(default_factory=list)
    damage: str | None = None  # SQLite's own check found the file damaged (not tampered with)

    @property
    def ok(self) -> bool:
        return not self.problems

    def shown(self) -> str:
        return "; ".join(self.problems[:5]) + (
            f"; and {len(self.problems) - 5} more" if len(self.problems) > 5 else ""
        )

    def error(self) -> IntegrityError:
        return IntegrityError(
            f"session {self.session_id} failed its integrity check: {self.shown()}. Nothing was changed; "
            f"`ketch sessions verify {self.session_id}` shows the whole report"
        )


Mac = Callable[[str, bytes], bytes]
Opens = Callable[
    [str, int, str, str, bytes], bool
]  # (session, seq, kind, event id, payload) -> authenticates


def check(
    session_id: str,
    rows: list[Row],
    last_seq: int,
    head: bytes | None,
    mac: Mac,
    opens: Opens,
    *,
    other_sessions: Callable[[int], list[tuple[str, str, str]]] = lambda seq: [],
    payload_ok: dict[int, bool] | None = None,
) -> Report:
    """Walk a session's journal and name every way it differs from what was written.

    ``payload_ok[seq]``, when given, says whether that entry's payload decrypted where it
    is (the loader has just tried); otherwise ``opens`` is asked.
    """
    report = Report(session_id, entries=len(rows))
    expected, prev = 1, b""
    where_ok: dict[int, bool] = {}
    for row in rows:
        here = (
            payload_ok[row.seq]
            if payload_ok is not None and row.seq in payload_ok
            else opens(session_id, row.seq, row.kind, row.event_id, row.payload)
        )
        where_ok[row.seq] = here
    for index, row in enumerate(rows):
        if row.seq > expected:
            span = (
                f"entry {expected}"
                if row.seq - expected == 1
                else f"entries {expected}-{row.seq - 1}"
            )
            report.problems.append(
                f"{span} {'is' if row.seq - expected == 1 else 'are'} missing (deleted)"
            )
            prev = b"?"  # the link into the first entry after a gap cannot match
        elif row.seq < expected:
            report.problems.append(f"entry {row.seq} appears more than once")
        here = where_ok[row.seq]
        if not here:
            report.problems.append(
                _misplaced(session_id, row, rows, where_ok, opens, other_sessions)
            )
        elif row.mac is None:
            report.problems.append(f"entry {row.seq} has no chain link (added outside ketch)")
        elif (
            prev != b"?"
            and mac(
                CHAIN,
                link_input(session_id, row.seq, row.kind, row.event_id, row.ts, row.payload, prev),
            )
            != row.mac
        ):
            previous = rows[index - 1] if index else None
            if previous is not None and not where_ok.get(previous.seq, True):
                pass  # already reported: the entry before it does not belong there
            else:
                report.problems.append(
                    f"entry {row.seq}: its chain link does not match (its timestamp, kind or link was altered, or an entry before it was replaced)"
                )
        prev = row.mac or b""
        expected = max(expected, row.seq + 1)
    last = rows[-1].seq if rows else 0
    tail_reported = bool(rows) and not where_ok.get(rows[-1].seq, True)
    if last < last_seq:
        span = f"entry {last_seq}" if last_seq - last == 1 else f"entries {last + 1}-{last_seq}"
        report.problems.append(
            f"{span} at the end {'is' if last_seq - last == 1 else 'are'} missing (the journal was truncated)"
        )
    elif last > last_seq:
        report.problems.append(
            f"entries after {last_seq}, where the session ends, were added outside ketch"
        )
    elif tail_reported:
        pass  # its last entry does not belong there: already said
    elif head is None and rows:
        report.problems.append("the session has no head link (its end cannot be checked)")
    elif (
        rows
        and rows[-1].mac is not None
        and mac(HEAD, head_input(session_id, last_seq, rows[-1].mac)) != head
    ):
        report.problems.append(
            "the session's head does not match its last entry (truncated, or its end was rewritten)"
        )
    return report


def _misplaced(
    session_id: str,
    row: Row,
    rows: list[Row],
    where_ok: dict[int, bool],
    opens: Opens,
    others: Callable[[int], list[tuple[str, str, str]]],
) -> str:
    """Name what an entry that does not authenticate where it sits is."""
    budget = _CLASSIFY_LIMIT
    for other in rows:
        if other.seq == row.seq or budget <= 0:
            continue
        budget -= 2
        if opens(session_id, other.seq, row.kind, row.event_id, row.payload) or opens(
            session_id, other.seq, other.kind, other.event_id, row.payload
        ):
            if where_ok.get(other.seq):
                return f"entry {row.seq} is a replayed copy of entry {other.seq}"
            return f"entry {row.seq} was written as entry {other.seq} (entries were reordered)"
    for sid, kind, event_id in others(row.seq):
        if sid == session_id or budget <= 0:
            continue
        budget -= 2
        if opens(sid, row.seq, row.kind, row.event_id, row.payload) or opens(
            sid, row.seq, kind, event_id, row.payload
        ):
            return f"entry {row.seq} was copied from session {sid}"
    return f"entry {row.seq} does not authenticate here (copied from another session, moved, altered, or written under another key)"
