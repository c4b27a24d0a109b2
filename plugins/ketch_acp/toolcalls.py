"""How a ketch tool call looks in an editor: its kind (the icon), title, locations
("follow along") and content (diffs for edits, text for the rest)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    TextContentBlock,
    ToolCallLocation,
)

# The bundled tools by name; other tools by their effects.
KINDS = {
    "read_file": "read",
    "list_dir": "search",
    "glob": "search",
    "grep": "search",
    "write_file": "edit",
    "edit_file": "edit",
    "shell": "execute",
    "web_fetch": "fetch",
    "update_plan": "think",
    "todo_write": "think",
}
MAX_TEXT = 20_000  # characters of a tool's output shown in the editor (the model got it all)

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def tool_kind(name: str, tool: Any | None) -> str:
    if name in KINDS:
        return KINDS[name]
    effects = {str(getattr(e, "value", e)) for e in getattr(tool, "effects", ()) or ()}
    if "write" in effects:
        return "edit"
    if "execute" in effects:
        return "execute"
    if "network" in effects:
        return "fetch"
    if effects == {"read"}:
        return "read"
    return "other"


def absolute(path: str, workspace: Path) -> str:
    candidate = Path(path).expanduser()
    return str(candidate if candidate.is_absolute() else (workspace / candidate))


def locations(
    name: str, tool_input: dict[str, Any], workspace: Path, line: int | None = None
) -> list[ToolCallLocation]:
    path = tool_input.get("path") if isinstance(tool_input, dict) else None
    if not isinstance(path, str) or not path:
        return []
    if (
        line is None
        and name == "read_file"
        and isinstance(tool_input.get("offset"), int)
        and tool_input["offset"] > 1
    ):
        line = int(tool_input["offset"])
    return [ToolCallLocation(path=absolute(path, workspace), line=line)]


def input_diff(
    name: str, tool_input: dict[str, Any], workspace: Path
) -> list[FileEditToolCallContent]:
    """What an edit would do, from its arguments alone (before any preview exists)."""
    path = tool_input.get("path")
    if not isinstance(path, str):
        return []
    target = absolute(path, workspace)
    if (
        name == "edit_file"
        and isinstance(tool_input.get("old_string"), str)
        and isinstance(tool_input.get("new_string"), str)
    ):
        return [
            FileEditToolCallContent(
                type="diff",
                path=target,
                old_text=tool_input["old_string"],
                new_text=tool_input["new_string"],
            )
        ]
    if name == "write_file" and isinstance(tool_input.get("content"), str):
        old = _small_text(Path(target))
        return [
            FileEditToolCallContent(
                type="diff", path=target, old_text=old, new_text=tool_input["content"]
            )
        ]
    return []


def _small_text(path: Path, limit: int = 1 << 20) -> str | None:
    """The file's text when it exists and is small (the 'before' of an overwrite)."""
    try:
        if not path.is_file() or path.stat().st_size > limit:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def looks_like_diff(text: str) -> bool:
    return any(_HUNK.match(line) for line in text.splitlines()[:50])


def diff_contents(
    diff: str, workspace: Path, default_path: str | None
) -> list[FileEditToolCallContent]:
    """A unified diff (git style, as the file tools make) as ACP diff items, one per hunk:
    the hunk's old and new text, which editors diff themselves."""
    items: list[FileEditToolCallContent] = []
    path = default_path
    old: list[str] | None = None
    new: list[str] = []
    last: list[list[str]] = []

    def close() -> None:
        if old is not None and path:
            items.append(
                FileEditToolCallContent(
                    type="diff", path=path, old_text="".join(old), new_text="".join(new)
                )
            )

    for raw in diff.splitlines(keepends=True):
        line = raw.rstrip("\n")
        if line.startswith("+++ "):
            close()
            old = None
            target = line[4:].strip()
            if target != "/dev/null":
                name = target[2:] if target.startswith("b/") else target
                path = (
                    default_path
                    if default_path and Path(default_path).name == Path(name).name
                    else absolute(name, workspace)
                )
            continue
        if line.startswith("--- "):
            continue
        if _HUNK.match(line):
            close()
            old, new, last = [], [], []
            continue
        if old is None:
            continue
        if line.startswith("\\"):  # "\ No newline at end of file": the line before has none
            for side in last:
                if side and side[-1].endswith("\n"):
                    side[-1] = side[-1][:-1]
            continue
        body = line[1:] + "\n"
        if line.startswith("-"):
            old.append(body)
            last = [old]
        elif line.startswith("+"):
            new.append(body)
            last = [new]
        else:
            old.append(body)
            new.append(body)
            last = [old, new]
    close()
    return items


def first_changed_line(diff: str) -> int | None:
    for line in diff.splitlines():
        match = _HUNK.match(line)
        if match:
            return int(match.group(2))
    return None


def text_content(text: str) -> ContentToolCallContent:
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT] + f"\n… [{len(text) - MAX_TEXT} more characters]"
    return ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))


def preview_contents(preview: str | None, workspace: Path, default_path: str | None) -> list[Any]:
    """A tool's preview (a diff for an edit, the command line for a command)."""
    if not preview:
        return []
    if looks_like_diff(preview):
        items = diff_contents(preview, workspace, default_path)
        if items:
            return items
    return [text_content(preview)]
