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
import tomllib
from pathlib import Path
from typing import Any

from ketch.api import KetchError
from ketch_claude_kit.config_files import write_atomically
from ketch_claude_kit.hooks_import import (
    Conversion,
    convert,
    map_handler,
    map_matcher,
    read_settings,
)

__all__ = ["Conversion", "convert", "map_handler", "map_matcher", "merge", "read_settings"]

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
        write_atomically(target, text)
    return new, addition
