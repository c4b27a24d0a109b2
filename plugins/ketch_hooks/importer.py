"""``ketch hooks import``: Claude Code's hooks (``.claude/settings.json``) as ketch config.

A project's ``.claude/settings.json`` and ``.claude/settings.local.json`` go into the
workspace's ``.ketch/config.toml`` (they run once the workspace is trusted, like any
workspace hook); the user's ``~/.claude/settings.json`` goes into ketch's user
``config.toml``. Each handler becomes one ``[[hooks.EVENT]]`` table with
``claude_names = true``, so the script sees the tool names it was written for.
Matchers naming Claude Code's tools are rewritten to ketch's (``Edit|Write`` ->
``edit_file|write_file``); regular expressions are kept (at run time a tool also
answers to its Claude Code names). What cannot be mapped (http/prompt/agent handlers,
``if`` conditions, PowerShell, events ketch does not have, matchers naming only tools
ketch lacks) is reported and left out; nothing is written twice, and the config file
is replaced only with text that still parses.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ketch.errors import KetchError
from ketch_claude_kit.tool_names import KETCH_TOOLS

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
        if part in KETCH_TOOLS:
            names.append(KETCH_TOOLS[part][0])
        elif part.startswith("mcp__") or part.islower():
            names.append(part)  # MCP tools and ketch's own names are the same in both
        else:
            dropped.append(part)
    unique = list(dict.fromkeys(names))
    return ("|".join(unique) if unique else None), dropped


def map_handler(handler: Any) -> tuple[dict[str, Any] | None, str]:
    """ketch's table for one handler, or None and why not; else a note (or "")."""
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


# --- writing ------------------------------------------------------------------------------


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # JSON's string escapes are TOML's


def toml_tables(entries: list[tuple[str, dict[str, Any]]], source: Path) -> str:
    lines = [f"\n# Imported from {source} by `ketch hooks import`"]
    for event, table in entries:
        lines.append(f"[[hooks.{event}]]")
        lines += [f"{key} = {toml_value(value)}" for key, value in table.items()]
        lines.append("")
    return "\n".join(lines)


def _key(event: str, table: dict[str, Any]) -> tuple[Any, ...]:
    return (event, table.get("matcher", "*"), table.get("command"), tuple(table.get("args") or ()))


def existing_keys(text: str) -> set[tuple[Any, ...]]:
    data = tomllib.loads(text) if text.strip() else {}
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return set()
    return {
        _key(event, t)
        for event, tables in hooks.items()
        if isinstance(tables, list)
        for t in tables
        if isinstance(t, dict)
    }


def merge(
    target: Path, conversion: Conversion, *, dry_run: bool
) -> tuple[list[tuple[str, dict[str, Any]]], str]:
    """The entries that are new to ``target`` and the text that adds them; written
    (atomically, only if the result parses) unless ``dry_run``."""
    try:
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        seen = existing_keys(current)
    except (OSError, UnicodeDecodeError) as exc:
        raise KetchError(f"cannot read {target}: {exc}; nothing was imported") from None
    except tomllib.TOMLDecodeError as exc:
        raise KetchError(f"{target}: {exc}; fix it first, nothing was imported") from None
    new = []
    for event, table in conversion.entries:
        if _key(event, table) not in seen:
            seen.add(_key(event, table))
            new.append((event, table))
    if not new:
        return [], ""
    addition = toml_tables(new, conversion.source)
    text = current + ("" if not current or current.endswith("\n") else "\n") + addition
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KetchError(
            f"{target}: adding the hooks would not parse ({exc}); does it define [hooks] some other way? Nothing was imported"
        ) from None
    if not dry_run:
        _write(target, text)
    return new, addition


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = (path.stat().st_mode & 0o777) if path.exists() else 0o600
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".config.", suffix=".toml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
