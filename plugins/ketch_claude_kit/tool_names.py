"""Claude Code's tool names and ketch's: the one table every compatibility path reads.

Claude Code calls ketch's ``shell`` ``Bash``, ``write_file`` ``Write``, and so on. A
file written for Claude Code (a hook matcher, an agent definition's ``tools``, a
command's ``allowed-tools``, a settings file's permission rules, the Agent SDK's
``allowed_tools``) names its tools; ketch reads those names as the ketch tools that do
the same job, accepts ketch's own names everywhere too, and says plainly when a name
means nothing here (:func:`why_unmapped`). MCP tools are ``mcp__SERVER__TOOL`` in both.

The table lists every tool of Claude Code's tools reference (code.claude.com/docs/en/
tools-reference, mid-2026) and the older names still found in files (``Task``,
``MultiEdit``, ``LS``, ``BashOutput``, ...). ``rule`` is the name a permission rule
for that tool takes in ketch's rule syntax (``Bash(git log:*)`` -> ``shell(...)``), or
None where no ketch rule means the same thing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class ClaudeTool:
    name: str  # Claude Code's name
    tools: tuple[str, ...] = ()  # the ketch tools doing its job (the first is its equivalent)
    rule: str | None = None  # the ketch permission-rule name for rules about it
    note: str = ""  # why there is no ketch tool, when there is none
    file_path: bool = False  # its input names its file as ``file_path`` (hooks see one)


def _t(
    name: str, *tools: str, rule: str | None = None, note: str = "", file_path: bool = False
) -> ClaudeTool:
    return ClaudeTool(name, tools, rule, note, file_path)


_NONE = "ketch has no such tool"
TABLE: tuple[ClaudeTool, ...] = (
    _t("Bash", "shell", "shell_job", rule="shell"),
    _t("BashOutput", "shell_job"),
    _t("KillShell", "shell_job"),
    _t("KillBash", "shell_job"),
    _t("TaskOutput", "shell_job"),
    _t("TaskStop", "shell_job"),
    _t("Read", "read_file", rule="read", file_path=True),
    _t("NotebookRead", "read_file", rule="read"),
    _t("Write", "write_file", rule="write", file_path=True),
    _t("Edit", "edit_file", rule="write", file_path=True),
    _t("MultiEdit", "edit_file", rule="write"),
    _t("NotebookEdit", rule="write", note="ketch edits notebooks as text files (edit_file)"),
    _t("Glob", "glob", rule="glob"),
    _t("Grep", "grep", rule="grep"),
    _t("LS", "list_dir", rule="list_dir"),
    _t("WebFetch", "web_fetch", rule="web"),
    _t("WebSearch", "web_search", rule="web_search"),
    _t("Agent", "agent", rule="agent"),
    _t("Task", "agent", rule="agent"),
    _t("Skill", "skill", rule="skill"),
    _t("TodoWrite", "todo", rule="todo"),
    _t("TodoRead", "todo"),
    _t("AskUserQuestion", note="the model asks in its answer; ketch has no question tool"),
    _t("ExitPlanMode", note="plan mode is the person's to leave (/mode build)"),
    _t("EnterPlanMode", note="plan mode is the person's to enter (/mode plan)"),
    _t("EnterWorktree", note=_NONE),
    _t("ExitWorktree", note=_NONE),
    _t("CronCreate", note=_NONE),
    _t("CronDelete", note=_NONE),
    _t("CronList", note=_NONE),
    _t("LSP", note=_NONE),
    _t("ListMcpResourcesTool", note="ketch offers MCP tools, not resources"),
    _t("ReadMcpResourceTool", note="ketch offers MCP tools, not resources"),
    _t("TaskCreate", note=_NONE),
    _t("TaskGet", note=_NONE),
    _t("TaskList", note=_NONE),
    _t("TaskUpdate", note=_NONE),
    _t("ToolSearch", note="ketch offers every tool up front"),
    _t("Artifact", note=_NONE),
    _t("PowerShell", note="ketch runs commands with bash (the shell tool)"),
    _t("SlashCommand", note="ketch's commands are the person's (/NAME), skills the model's"),
    _t("Monitor", note=_NONE),
)
BY_NAME: dict[str, ClaudeTool] = {t.name: t for t in TABLE}
_BY_LOWER: dict[str, ClaudeTool] = {t.name.lower(): t for t in TABLE}

# Claude Code's name -> the ketch tools that do its job (the first is its equivalent).
KETCH_TOOLS: dict[str, tuple[str, ...]] = {t.name: t.tools for t in TABLE if t.tools}

# A ketch tool -> Claude Code's name for it (its first entry in the table).
CLAUDE_NAME: Mapping[str, str] = MappingProxyType(
    {t.tools[0]: t.name for t in reversed(TABLE) if t.tools}
)


def lookup(name: str, *, any_case: bool = False) -> ClaudeTool | None:
    """The table's entry for a Claude Code name (exact case unless ``any_case``)."""
    return (_BY_LOWER if any_case else BY_NAME).get(name.lower() if any_case else name)


def claude_name(tool: str) -> str | None:
    """Claude Code's name for a ketch tool (MCP tools keep theirs), or None."""
    return CLAUDE_NAME.get(tool) or (tool if tool.startswith("mcp__") else None)


def takes_file_path(tool: str) -> bool:
    """Whether Claude Code's tool for the ketch tool ``tool`` names its file as
    ``file_path`` (Read, Write, Edit): a hook written for Claude Code reads it there."""
    entry = BY_NAME.get(claude_name(tool) or "")
    return entry is not None and entry.file_path


def shown_name(tool: str) -> str:
    """How a ketch tool is named to a program written for Claude Code: Claude Code's
    name where there is one, else ketch's own."""
    return claude_name(tool) or tool


def names_for(tool: str) -> tuple[str, ...]:
    """Every name a matcher may use for the ketch tool ``tool``: its own, then the
    Claude Code names whose job it does."""
    return (tool, *(t.name for t in TABLE if t.tools and t.tools[0] == tool))


def ketch_names(name: str, loaded: Iterable[str], *, any_case: bool = False) -> list[str]:
    """The loaded ketch tools a single name means: a Claude Code name, ketch's own
    name, or a glob over ketch's names (``mcp__github__*``)."""
    present = set(loaded)
    entry = lookup(name, any_case=any_case)
    names = [n for n in (entry.tools if entry else (name,)) if n in present]
    if any(c in name for c in "*?["):
        from ketch_policy_kit.globs import match_name

        names += sorted(n for n in present if match_name(n, name) and n not in names)
    return names


def why_unmapped(name: str, loaded: Iterable[str] = ()) -> str:
    """Why ``name`` names no loaded ketch tool, in one phrase for a report."""
    entry = lookup(name) or lookup(name, any_case=True)
    if entry is not None and not entry.tools:
        return f"Claude Code's {entry.name} has no ketch equivalent ({entry.note or _NONE})"
    if entry is not None:
        return (
            f"Claude Code's {entry.name} is ketch's {', '.join(entry.tools)}, which is not loaded"
        )
    if name.startswith("mcp__"):
        return f"{name} is not a tool of any connected MCP server"
    return f"{name!r} is neither a ketch tool nor one of Claude Code's"


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
        names = ketch_names(entry.split("(", 1)[0].strip(), loaded)
        if names:
            found.update(names)
        else:
            unknown.append(entry)
    return found, unknown
