"""Which diagnostics are new, and how they read.

A diagnostic is the same one before and after an edit when its severity, source, code,
message and the text it points at are the same (so a problem that only moved down
because lines were added above it is not new). Only errors and warnings count.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ketch_lsp.positions import lines_of, offset_at

ERROR, WARNING, INFORMATION, HINT = 1, 2, 3, 4
NAMES = {ERROR: "error", WARNING: "warning", INFORMATION: "info", HINT: "hint"}
MESSAGE_CHARS = 400


@dataclass(frozen=True)
class Problem:
    """One diagnostic as the model and the person see it."""

    path: Path
    line: int  # 1-based
    column: int  # 1-based, in characters
    severity: int
    message: str
    code: str
    source: str

    def render(self, shown: str) -> str:
        code = f" [{self.code}]" if self.code else ""
        return f"{shown}:{self.line}:{self.column}: {NAMES.get(self.severity, 'error')}: {self.message}{code}"


def severity_of(diagnostic: Any) -> int:
    value = getattr(diagnostic, "severity", None)
    return int(value) if value else ERROR  # unspecified: the client decides; count it


def counts(diagnostic: Any) -> bool:
    return severity_of(diagnostic) in (ERROR, WARNING)


def _span(diagnostic: Any, text: str) -> str:
    rng = diagnostic.range
    start = offset_at(text, rng.start.line, rng.start.character)
    end = offset_at(text, rng.end.line, rng.end.character)
    return text[start : max(start, end)][:200]


def _key(diagnostic: Any, text: str) -> tuple[Any, ...]:
    return (
        severity_of(diagnostic),
        str(getattr(diagnostic, "source", "") or ""),
        str(getattr(diagnostic, "code", "") or ""),
        " ".join(str(diagnostic.message).split()),
        _span(diagnostic, text),
    )


def fresh(now: list[Any], text: str, before: list[Any], before_text: str) -> list[Any]:
    """The errors and warnings of ``now`` that ``before`` did not have (as many times)."""
    known = Counter(_key(d, before_text) for d in before if counts(d))
    out = []
    for diagnostic in now:
        if not counts(diagnostic):
            continue
        key = _key(diagnostic, text)
        if known[key] > 0:
            known[key] -= 1
            continue
        out.append(diagnostic)
    return out


def problem(path: Path, diagnostic: Any, text: str) -> Problem:
    start = diagnostic.range.start
    lines = lines_of(text)
    line_text = lines[start.line] if 0 <= start.line < len(lines) else ""
    from ketch_lsp.positions import index_of_utf16

    column = index_of_utf16(line_text, start.character) + 1
    message = "; ".join(
        " ".join(line.split()) for line in str(diagnostic.message).splitlines() if line.strip()
    )
    if len(message) > MESSAGE_CHARS:
        message = message[: MESSAGE_CHARS - 1] + "…"
    code = getattr(diagnostic, "code", None)
    return Problem(
        path=path,
        line=start.line + 1,
        column=column,
        severity=severity_of(diagnostic),
        message=message,
        code="" if code is None else str(code),
        source=str(getattr(diagnostic, "source", "") or ""),
    )


def ordered(problems: list[Problem]) -> list[Problem]:
    return sorted(problems, key=lambda p: (str(p.path), p.severity, p.line, p.column))
