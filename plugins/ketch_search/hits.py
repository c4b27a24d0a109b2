"""What both grep engines produce, and the one formatter that renders it.

ripgrep's JSON events and the Python fallback both become :class:`Hit` records, so the
output format is the same whichever engine ran: ``path:line:text`` for a matching line,
``path-line-text`` for a context line, ``--`` between separate groups when context
was asked for; or just the paths with ``files_only``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ketch_tool_kit.paths import display


@dataclass(frozen=True)
class Hit:
    path: Path
    line: int
    text: str
    match: bool


@dataclass
class Search:
    hits: list[Hit] = field(default_factory=list)
    matches: int = 0
    truncated: bool = False  # stopped at the result cap
    timed_out: bool = False
    warnings: list[str] = field(default_factory=list)
    skipped: set[Path] = field(default_factory=set)  # secret-looking files left out

    def add(self, hit: Hit) -> None:
        self.hits.append(hit)
        if hit.match:
            self.matches += 1


@dataclass(frozen=True)
class Limits:
    max_results: int
    max_chars: int
    max_line_chars: int


def render(
    search: Search, *, workspace: Path, files_only: bool, context: int, limits: Limits
) -> tuple[str, int]:
    """The text the model sees and how many matches it shows."""
    if files_only:
        paths = list(dict.fromkeys(display(h.path, workspace) for h in search.hits if h.match))
        out = paths[: limits.max_results]
        extra = len(paths) - len(out)
        notes = [f"[{extra} more files not shown]"] if extra > 0 else []
        return "\n".join(out + notes), len(out)
    lines: list[str] = []
    kinds: list[Hit | None] = []  # the hit behind each line (None for "--")
    used = 0
    shown_matches = 0
    previous: Hit | None = None
    last_match: Hit | None = None
    cut_by_chars = False
    for hit in search.hits:
        if hit.match and shown_matches >= limits.max_results:
            break
        text = hit.text.rstrip("\r")
        if len(text) > limits.max_line_chars:
            text = (
                text[: limits.max_line_chars]
                + f"… [{len(text) - limits.max_line_chars} more characters]"
            )
        mark = ":" if hit.match else "-"
        entry = f"{display(hit.path, workspace)}{mark}{hit.line}{mark}{text}"
        separator = (
            context > 0
            and previous is not None
            and (previous.path != hit.path or hit.line > previous.line + 1)
        )
        cost = len(entry) + 1 + (3 if separator else 0)
        if lines and used + cost > limits.max_chars:
            cut_by_chars = True
            break
        if separator:
            lines.append("--")
            kinds.append(None)
        lines.append(entry)
        kinds.append(hit)
        used += cost
        previous = hit
        if hit.match:
            shown_matches += 1
            last_match = hit
    # Drop trailing context that leads up to a match that was not shown.
    while kinds:
        tail = kinds[-1]
        after_last = (
            tail is not None
            and last_match is not None
            and tail.path == last_match.path
            and 0 <= tail.line - last_match.line <= context
        )
        if tail is None or not after_last:
            lines.pop()
            kinds.pop()
            continue
        break
    if cut_by_chars:
        lines.append(
            f"[output cut at {limits.max_chars} characters after {shown_matches} matches; narrow the search (path, glob, a more specific pattern)]"
        )
    return "\n".join(lines), shown_matches
