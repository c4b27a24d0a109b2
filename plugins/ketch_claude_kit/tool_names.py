"""Claude Code's tool names and ketch's.

Claude Code calls ketch's ``shell`` ``Bash``, ``write_file`` ``Write``, and so on. A
file written for Claude Code (a hook matcher, an agent definition's ``tools``) names
its tools; ketch reads those names as the ketch tools that do the same job, and
accepts ketch's own names everywhere too. MCP tools are ``mcp__SERVER__TOOL`` in both.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import Any

# Claude Code's name -> the ketch tools that do its job (the first is its equivalent).
KETCH_TOOLS: dict[str, tuple[str, ...]] = {
    "Bash": ("shell", "shell_job"),
    "BashOutput": ("shell_job",),
    "KillShell": ("shell_job",),
    "KillBash": ("shell_job",),
    "Read": ("read_file",),
    "Write": ("write_file",),
    "Edit": ("edit_file",),
    "MultiEdit": ("edit_file",),
    "Glob": ("glob",),
    "Grep": ("grep",),
    "LS": ("list_dir",),
    "WebFetch": ("web_fetch",),
    "Agent": ("agent",),
    "Task": ("agent",),
    "Skill": ("skill",),
}

# A ketch tool -> Claude Code's name for it (where Claude Code has one).
CLAUDE_NAME: dict[str, str] = {
    "shell": "Bash",
    "shell_job": "BashOutput",
    "read_file": "Read",
    "write_file": "Write",
    "edit_file": "Edit",
    "glob": "Glob",
    "grep": "Grep",
    "list_dir": "LS",
    "web_fetch": "WebFetch",
    "agent": "Agent",
}


def claude_name(tool: str) -> str | None:
    """Claude Code's name for a ketch tool (MCP tools keep theirs), or None."""
    return CLAUDE_NAME.get(tool) or (tool if tool.startswith("mcp__") else None)


def names_for(tool: str) -> tuple[str, ...]:
    """Every name a matcher may use for the ketch tool ``tool``: its own, then the
    Claude Code names whose job it does."""
    return (tool, *(claude for claude, ketch in KETCH_TOOLS.items() if ketch[0] == tool))


def split_list(value: Any) -> list[str]:
    """The entries of a tool list: a YAML list, or one string separated by commas or
    blanks outside parentheses (``Read, Grep, Bash(git log:*)``)."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if str(v).strip()]
    items: list[str] = []
    depth, current = 0, ""
    for char in str(value):
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(depth - 1, 0)
        if depth == 0 and (char == "," or char.isspace()):
            if current.strip():
                items.append(current.strip())
            current = ""
            continue
        current += char
    if current.strip():
        items.append(current.strip())
    return items


def ketch_tools(entries: Iterable[str], known: Iterable[str]) -> tuple[set[str], list[str]]:
    """The loaded ketch tools a list names, and the entries that name none.

    An entry is a ketch tool name, a Claude Code name, a glob (``mcp__github__*``) or
    an entry with a scope (``Bash(git log:*)``), which names its whole tool here."""
    loaded = set(known)
    found: set[str] = set()
    unknown: list[str] = []
    for entry in entries:
        name = entry.split("(", 1)[0].strip()
        names = [n for n in KETCH_TOOLS.get(name, (name,)) if n in loaded]
        if any(c in name for c in "*?["):
            names += [n for n in loaded if fnmatch.fnmatchcase(n, name)]
        if names:
            found.update(names)
        else:
            unknown.append(entry)
    return found, unknown
