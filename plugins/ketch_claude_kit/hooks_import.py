"""Claude Code's hooks (a settings file's ``hooks``) as ketch's ``[[hooks.EVENT]]`` tables.

Each handler becomes one table with ``claude_names = true``, so the script sees the
tool names it was written for. Matchers naming Claude Code's tools are rewritten to
ketch's (``Edit|Write`` -> ``edit_file|write_file``, ``WebSearch`` -> ``web_search``);
regular expressions are kept (at run time a tool also answers to its Claude Code
names). What cannot be mapped (http/prompt/agent handlers, ``if`` conditions,
PowerShell, events ketch does not have, matchers naming only tools ketch lacks, a
command naming ``${CLAUDE_PLUGIN_ROOT}`` outside a plugin) is reported and left out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ketch.api import KetchError
from ketch_claude_kit.claude_vars import references
from ketch_claude_kit.tool_names import lookup, why_unmapped

EVENTS = (
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Notification",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
)
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"})
_EXACT = re.compile(r"[A-Za-z0-9_ ,|-]+")


@dataclass
class Conversion:
    source: Path
    entries: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (event, table)
    skipped: list[str] = field(default_factory=list)


def read_settings(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise KetchError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise KetchError(
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); nothing was imported"
        ) from None
    if not isinstance(data, dict):
        raise KetchError(f"{path}: not a settings object; nothing was imported")
    return data


def convert(path: Path, settings: dict[str, Any]) -> Conversion:
    out = Conversion(path)
    hooks = settings.get("hooks")
    if hooks is None:
        return out
    if not isinstance(hooks, dict):
        out.skipped.append('"hooks" is not an object')
        return out
    for event, groups in hooks.items():
        if event not in EVENTS:
            out.skipped.append(f"{event}: ketch has no such event")
            continue
        for group in groups if isinstance(groups, list) else []:
            if not isinstance(group, dict):
                continue
            matcher, dropped = map_matcher(event, group.get("matcher"))
            if matcher is None:
                out.skipped.append(
                    f"{event} matcher {group.get('matcher')!r}: names no tool ketch has ({', '.join(dropped)})"
                )
                continue
            if dropped:
                out.skipped.append(
                    f"{event} matcher {group.get('matcher')!r}: {', '.join(dropped)} left out (no such tool in ketch)"
                )
            for handler in group.get("hooks") or []:
                table, problem = map_handler(handler)
                if table is None:
                    out.skipped.append(f"{event}: {problem}")
                    continue
                if problem:
                    out.skipped.append(f"{event}: {problem}")
                out.entries.append((event, {"matcher": matcher, **table}))
    return out


def map_matcher(event: str, matcher: Any) -> tuple[str | None, list[str]]:
    """ketch's matcher for Claude Code's (None: it names only tools ketch lacks), and
    the names left out."""
    if matcher in (None, "", "*"):
        return "*", []
    text = str(matcher)
    if event not in TOOL_EVENTS or not _EXACT.fullmatch(text):
        return text, []  # another event's subject, or a regex (aliases apply at run time)
    names: list[str] = []
    dropped: list[str] = []
    for part in (p.strip() for p in re.split(r"[|,]", text)):
        if not part:
            continue
        entry = lookup(part)
        if entry is not None and entry.tools:
            names.append(entry.tools[0])
        elif entry is None and (part.startswith("mcp__") or part.islower()):
            names.append(part)  # MCP tools and ketch's own names are the same in both
        else:
            dropped.append(part if entry is None else f"{part} ({why_unmapped(part)})")
    unique = list(dict.fromkeys(names))
    return ("|".join(unique) if unique else None), dropped


def map_handler(handler: Any, *, plugin: bool = False) -> tuple[dict[str, Any] | None, str]:
    """ketch's table for one handler, or None and why not; else a note (or "").
    ``plugin``: the handler is an installed Claude Code plugin's, which has
    ``${CLAUDE_PLUGIN_ROOT}`` and ``${CLAUDE_PLUGIN_DATA}`` (the caller sets them)."""
    if not isinstance(handler, dict):
        return None, "a handler that is not an object"
    kind = handler.get("type", "command")
    command = handler.get("command")
    shown = str(command or handler.get("url") or handler.get("prompt") or "")[:60]
    if kind != "command":
        return None, f"{kind} handler {shown!r} not imported (ketch runs command hooks only)"
    if not isinstance(command, str) or not command.strip():
        return None, "a command handler without a command"
    if "if" in handler:
        return (
            None,
            f"{shown!r} not imported: ketch has no `if` conditions (check inside the script, or narrow the matcher)",
        )
    if str(handler.get("shell", "bash")).lower() == "powershell":
        return None, f"{shown!r} not imported: ketch runs hooks with sh, not PowerShell"
    texts = [command, *(str(a) for a in handler.get("args") or [])]
    plugin_vars = sorted(
        {name for text in texts for name in references(text) if name.startswith("CLAUDE_PLUGIN")}
    )
    if plugin and any("${user_config." in text for text in texts):
        return None, (
            f"{shown!r} not used: it names ${{user_config.*}}, a value Claude Code asks for "
            "when the plugin is enabled and ketch does not"
        )
    if plugin_vars and not plugin:
        return None, (
            f"{shown!r} not imported: it uses ${{{plugin_vars[0]}}}, which only an installed "
            "Claude Code plugin has"
        )
    table: dict[str, Any] = {"command": command}
    args = handler.get("args")
    if isinstance(args, list):
        table["args"] = [str(a) for a in args]
    timeout = handler.get("timeout")
    if isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0:
        table["timeout"] = min(float(timeout), 3600.0)
    note = ""
    if handler.get("async") or handler.get("asyncRewake"):
        table["async"] = True
        if handler.get("asyncRewake"):
            note = f"{shown!r}: asyncRewake runs as async (ketch does not wake the model on exit 2)"
    table["claude_names"] = True
    return table, note
