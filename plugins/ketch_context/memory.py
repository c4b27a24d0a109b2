"""The project memory: ``.ketch/memory.md`` in the workspace, a Markdown list of notes.

The user adds notes with ``/memory add`` (no question asked: the user typed it) and can
edit the file by hand; the model adds them with the ``remember`` tool, which always
asks: it writes under ``.ketch/``, which ketch's hard guards protect, so no profile
or rule can let the model write its own future instructions unseen. The newest notes
go into every system prompt of the project (capped; the oldest are cut first).
"""

from __future__ import annotations

import datetime
import re
from pathlib import Path

from ketch_context.files import Read, read_text, resolve, within
from ketch_text_kit.unicode import strip_invisible

HEADER = (
    "# ketch project memory\n\n"
    "Notes ketch puts in the system prompt of every session in this project. "
    "Edit or delete them freely; /memory shows them.\n\n"
)
MAX_NOTE = 500
_ENTRY = re.compile(r"^\s*[-*]\s+(.*\S)\s*$")
_SECRET = re.compile(
    r"(sk-[A-Za-z0-9_\-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----|AIza[0-9A-Za-z_\-]{35})"
)


class NoteRefused(ValueError):
    """A note that cannot be saved; the message says why."""


DEFAULT_FILE = ".ketch/memory.md"


def memory_path(workspace: Path, relative: str) -> Path:
    """The memory file; a configured path that leaves the workspace falls back to the default."""
    path = (workspace / relative).absolute()
    if not within(resolve(path), resolve(workspace)):
        return (workspace / DEFAULT_FILE).absolute()
    return path


def clean_note(note: str) -> str:
    text, _ = strip_invisible(note)
    text = " ".join(text.split())
    if not text:
        raise NoteRefused("the note is empty")
    if len(text) > MAX_NOTE:
        raise NoteRefused(f"the note is {len(text)} characters; keep it under {MAX_NOTE}")
    if _SECRET.search(text):
        raise NoteRefused(
            "the note looks like it holds a secret (an API key or private key); it was not saved"
        )
    return text


def entries(path: Path) -> list[str]:
    read = read_text(path, 1_000_000)
    if not isinstance(read, Read):
        return []
    return [m.group(1) for line in read.text.splitlines() if (m := _ENTRY.match(line))]


def append(path: Path, note: str, *, by: str) -> int:
    """Add one note (``by``: user or model); returns its number."""
    text = clean_note(note)
    stamp = datetime.date.today().isoformat()
    path.parent.mkdir(parents=True, exist_ok=True)
    existing = path.read_text(encoding="utf-8", errors="replace") if path.exists() else HEADER
    if existing and not existing.endswith("\n"):
        existing += "\n"
    path.write_text(existing + f"- {text} ({by}, {stamp})\n", encoding="utf-8")
    return len(entries(path))


def forget(path: Path, number: int) -> str:
    """Remove note ``number`` (1-based, as /memory lists them); returns its text."""
    if not path.exists():
        raise NoteRefused("the memory is empty")
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    seen = 0
    for index, line in enumerate(lines):
        match = _ENTRY.match(line)
        if match:
            seen += 1
            if seen == number:
                del lines[index]
                path.write_text("".join(lines), encoding="utf-8")
                return match.group(1)
    raise NoteRefused(f"there is no note {number} (the memory has {seen})")


def prompt_text(path: Path, max_bytes: int) -> tuple[str, dict[str, int], bool]:
    """The memory for the system prompt: (text, invisible characters removed, cut)."""
    read = read_text(path, 1_000_000)
    if not isinstance(read, Read):
        return "", {}, False
    text, removed = strip_invisible(read.text)
    body = text[len(HEADER) :] if text.startswith(HEADER) else text
    body = body.strip()
    data = body.encode("utf-8")
    if len(data) <= max_bytes:
        return body, removed, False
    tail = data[-max_bytes:].decode("utf-8", "ignore")
    cut = tail.find("\n")
    return "(older notes cut for space; /memory shows all)\n" + tail[cut + 1 :], removed, True
