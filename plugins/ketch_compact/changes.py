"""Which files the session changed: from the saved transcript's tool calls and results.

A call counts when its tool is one of ``[compaction] changed_file_tools`` and its result
says it succeeded. The path comes from the usual argument names, or from the file
headers of a patch (``*** Update File: x``, ``+++ b/x``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ketch.api import Message

PATH_KEYS = ("path", "file_path", "filename", "file", "target_file", "target")
_PATCH_FILE = re.compile(
    r"^(?:\*\*\* (?:Add|Update|Delete) File: |\+\+\+ b/)(\S.*?)\s*$", re.MULTILINE
)


def paths_of(tool_input: dict[str, object]) -> list[str]:
    found = [
        str(tool_input[k])
        for k in PATH_KEYS
        if isinstance(tool_input.get(k), str) and tool_input[k]
    ]
    for key in ("edits", "files"):
        items = tool_input.get(key)
        if isinstance(items, list):
            for item in items:
                if isinstance(item, dict):
                    found += [
                        str(item[k]) for k in PATH_KEYS if isinstance(item.get(k), str) and item[k]
                    ]
    for key in ("patch", "diff", "input"):
        text = tool_input.get(key)
        if isinstance(text, str):
            found += _PATCH_FILE.findall(text)
    return list(dict.fromkeys(found))


def files_changed(transcript: Iterable[Message], tools: Iterable[str]) -> dict[str, list[str]]:
    """Path -> the tools that changed it (in order, repeats kept), oldest change first."""
    names = set(tools)
    transcript = tuple(transcript)
    succeeded = {
        r.tool_call_id for m in transcript if m.role == "tool" for r in m.tool_results if r.ok
    }
    changed: dict[str, list[str]] = {}
    for message in transcript:
        if message.role != "assistant":
            continue
        for call in message.tool_calls:
            if call.name in names and call.id in succeeded:
                for path in paths_of(call.input):
                    changed.setdefault(path, []).append(call.name)
    return changed


def describe(changed: dict[str, list[str]], limit: int = 60) -> str:
    items = []
    for path, tools in list(changed.items())[:limit]:
        counts = {t: tools.count(t) for t in dict.fromkeys(tools)}
        how = ", ".join(f"{t} ×{n}" if n > 1 else t for t, n in counts.items())
        items.append(f"{path} ({how})")
    more = len(changed) - limit
    return "; ".join(items) + (f"; and {more} more" if more > 0 else "")
