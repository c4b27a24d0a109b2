"""Keeping a command's output within budget: its head and its tail, with a note of the cut.

Memory stays bounded whatever the command prints (10 MB or 10 GB): only the first and
the last few kilobytes are kept, while bytes and lines are counted. Terminal escape
sequences are dropped and carriage-return progress bars collapsed to their last state,
since the model only pays for them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


@dataclass
class HeadTail:
    head_bytes: int
    tail_bytes: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0
    newlines: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.newlines += chunk.count(b"\n")
        room = self.head_bytes - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.tail_bytes:
                del self.tail[: len(self.tail) - self.tail_bytes]

    @property
    def cut_bytes(self) -> int:
        return self.total - len(self.head) - len(self.tail)


def clean(text: str) -> str:
    """Drop escape sequences; keep only the last state of carriage-return redraws."""
    text = _ANSI.sub("", text)
    if "\r" not in text:
        return text
    lines = []
    for line in text.split("\n"):
        if line.endswith("\r"):
            line = line[:-1]
        if "\r" in line:
            parts = [p for p in line.split("\r") if p]
            line = parts[-1] if parts else ""
        lines.append(line)
    return "\n".join(lines)


def render(buffer: HeadTail, *, max_lines: int) -> str:
    """The kept output as text, with a note where the middle was cut."""
    head = buffer.head.decode("utf-8", "replace")
    if not buffer.tail:
        return _cap_lines(clean(head), max_lines)
    tail = buffer.tail.decode("utf-8", "replace")
    if buffer.cut_bytes <= 0:
        return _cap_lines(clean(head + tail), max_lines)
    # Cut at line boundaries when one is near, so no half lines are shown.
    newline = head.rfind("\n")
    if newline > len(head) * 0.8:
        head = head[: newline + 1]
    newline = tail.find("\n")
    if 0 <= newline < len(tail) * 0.2:
        tail = tail[newline + 1 :]
    kept_lines = head.count("\n") + tail.count("\n")
    cut_lines = max(0, buffer.newlines - kept_lines)
    note = f"[... {buffer.total - len(head.encode()) - len(tail.encode()):,} bytes ({cut_lines:,} lines) cut from the middle of the output ...]"
    head_text = clean(head)
    joiner = "" if head_text.endswith("\n") or not head_text else "\n"
    return _cap_lines(f"{head_text}{joiner}{note}\n{clean(tail)}", max_lines)


def _cap_lines(text: str, max_lines: int) -> str:
    lines = text.split("\n")
    if len(lines) <= max_lines:
        return text
    keep_head = max_lines // 2
    keep_tail = max_lines - keep_head
    cut = len(lines) - keep_head - keep_tail
    return "\n".join(
        [
            *lines[:keep_head],
            f"[... {cut:,} lines cut from the middle of the output ...]",
            *lines[-keep_tail:],
        ]
    )
