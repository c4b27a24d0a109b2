"""Markdown files with YAML front matter (Claude Code's command and skill files), and
the folders they are read from.

Project folders (``.ketch/NAME/``, ``.claude/NAME/`` in the workspace) come first, then
the user's own (the user config dir's ``NAME/``, ``~/.claude/NAME/``): a project's file
shadows a user's of the same name. A folder knows whether it is the user's own: only
those, and the folders of a trusted workspace, may run ``!`` lines.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 256 * 1024


@dataclass(frozen=True)
class Folder:
    path: Path
    label: str  # how the user sees where a file came from: "project .claude/commands"
    users_own: bool  # the user's config dir (not a repository's)


@dataclass
class MarkdownFile:
    path: Path
    meta: dict[str, Any]
    body: str
    folder: Folder
    problem: str = ""  # why the front matter was not understood (the file is still usable)
    extra: dict[str, Any] = field(default_factory=dict)

    def text(self, key: str) -> str:
        value = self.meta.get(key)
        return " ".join(str(value).split()) if value is not None else ""


def folders(workspace: Path, name: str) -> list[Folder]:
    """Where files of kind ``name`` (``commands``, ``skills``) are looked for, in precedence order."""
    from ketch.paths import config_dir

    home = Path(os.path.expanduser("~"))
    return [
        Folder(workspace / ".ketch" / name, f"project .ketch/{name}", users_own=False),
        Folder(workspace / ".claude" / name, f"project .claude/{name}", users_own=False),
        Folder(config_dir() / name, f"user {name}", users_own=True),
        Folder(home / ".claude" / name, f"user ~/.claude/{name}", users_own=True),
    ]


def parse(text: str) -> tuple[dict[str, Any], str, str]:
    """(front matter, body, problem). No front matter: ({}, text, "")."""
    if not text.startswith("---"):
        return {}, text, ""
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text, ""
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() in ("---", "..."))
    except StopIteration:
        return {}, text, "the front matter has no closing ---"
    import yaml

    body = "\n".join(lines[end + 1 :])
    try:
        data = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return {}, body, f"the front matter is not valid YAML ({first})"
    if not isinstance(data, dict):
        return {}, body, "the front matter is not a mapping of keys"
    return {str(k): v for k, v in data.items()}, body, ""


def read(path: Path, folder: Folder) -> MarkdownFile | None:
    """The file, or None when it cannot be read as text (too big, not UTF-8, gone)."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    meta, body, problem = parse(text.replace("\r\n", "\n"))
    return MarkdownFile(path, meta, body.strip("\n"), folder, problem)


def first_line(body: str) -> str:
    """The first non-empty line of a body, without Markdown heading marks (a default description)."""
    for line in body.splitlines():
        stripped = line.strip().lstrip("#").strip()
        if stripped:
            return stripped[:200]
    return ""
