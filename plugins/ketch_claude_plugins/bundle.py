"""A plugin's layout, read as Claude Code reads it: ``.claude-plugin/plugin.json``
(optional) and the marketplace entry, merged (the entry supplements the manifest; with
``"strict": false`` it is the whole definition, and a manifest that also declares
components is an error), then the default folders.

| component | default | manifest / entry field |
|---|---|---|
| commands | ``commands/`` | ``commands``: folders or ``.md`` files; replaces the default |
| agents | ``agents/`` | ``agents``: the same |
| skills | ``skills/`` (or a ``SKILL.md`` at the root) | ``skills``: folders; added to the default |
| hooks | ``hooks/hooks.json`` | ``hooks``: files or an inline object; added |
| MCP servers | ``.mcp.json`` | ``mcpServers``: files or an inline object; added |

Every path is relative to the plugin and starts with ``./`` (``skills`` also takes
``.``); none may lead outside it. What ketch does not use (LSP servers, output styles,
monitors, themes, workflows, ``bin/``, ``settings.json``, ``userConfig``, channels,
dependencies) is listed, never silently ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ketch.api import KetchError
from ketch_claude_plugins.catalog import relative_path

MANIFEST = Path(".claude-plugin") / "plugin.json"
COMPONENT_KEYS = ("commands", "agents", "skills", "hooks", "mcpServers")
# What Claude Code plugins can hold that ketch does not use, and how to say so.
UNUSED_KEYS = {
    "lspServers": "LSP servers",
    "outputStyles": "output styles",
    "userConfig": "userConfig values (ketch does not ask for them)",
    "channels": "channels",
    "dependencies": "dependencies on other plugins (install them yourself)",
    "workflows": "workflows",
    "experimental": "experimental components (themes, monitors)",
    "monitors": "monitors",
    "themes": "themes",
}
UNUSED_PATHS = {
    ".lsp.json": "LSP servers",
    "output-styles": "output styles",
    "monitors": "monitors",
    "themes": "themes",
    "workflows": "workflows",
    "bin": "bin/ executables (not put on the shell's PATH)",
    "settings.json": "settings.json",
}


@dataclass
class Config:
    """One hooks or MCP configuration: where it is written (relative to the plugin),
    and its content."""

    source: str
    data: dict[str, Any]


@dataclass
class Layout:
    name: str
    root: Path
    manifest: dict[str, Any] = field(default_factory=dict)
    version: str = ""
    description: str = ""
    default_enabled: bool = True
    commands: list[Path] = field(default_factory=list)
    agents: list[Path] = field(default_factory=list)
    skills: list[Path] = field(default_factory=list)
    hooks: list[Config] = field(default_factory=list)
    mcp: list[Config] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise KetchError(f"{what}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KetchError(f"{what}: cannot be read ({exc})") from None
    except ValueError as exc:
        raise KetchError(f"{what}: not valid JSON ({exc})") from None


def _paths(root: Path, value: Any, what: str, *, allow_dot: bool = False) -> list[Path]:
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise KetchError(f"{what}: a path or a list of paths is expected")
    found = []
    for text in texts:
        if allow_dot and text == ".":
            text = "./"
        found.append(relative_path(root, text, what))
    return found


def read_layout(root: Path, entry: dict[str, Any] | None, name: str) -> Layout:
    """The components of the plugin at ``root``; a clear error (naming the file and
    field) when Claude Code would not load it either."""
    entry = entry or {}
    manifest_path = root / MANIFEST
    manifest: dict[str, Any] = {}
    if manifest_path.exists():
        data = _json(manifest_path, f"{name}: {MANIFEST.as_posix()}")
        if not isinstance(data, dict):
            raise KetchError(f"{name}: {MANIFEST.as_posix()} is not a JSON object")
        manifest = data
    strict = entry.get("strict", True) is not False
    declared = [k for k in COMPONENT_KEYS if k in manifest]
    if not strict and declared:
        raise KetchError(
            f"{name}: the marketplace entry says strict: false, and plugin.json also declares "
            f"{', '.join(declared)}: conflicting manifests"
        )
    layout = Layout(
        name=name,
        root=root,
        manifest=manifest,
        version=str(manifest.get("version") or entry.get("version") or ""),
        description=str(manifest.get("description") or entry.get("description") or ""),
        default_enabled=entry.get("defaultEnabled", manifest.get("defaultEnabled", True))
        is not False,
    )
    sources = [(f"{MANIFEST.as_posix()}", manifest), ("marketplace entry", entry)]
    for kind in ("commands", "agents"):
        listed = [
            p
            for where, data in sources
            if kind in data
            for p in _paths(root, data[kind], f"{name}: {where}: {kind}")
        ]
        default = root / kind
        chosen = listed or ([default] if default.is_dir() else [])
        if listed and default.is_dir() and not any(_within(p, default) for p in listed):
            layout.problems.append(
                f"{name}: {kind}/ is not read: the manifest lists its {kind} elsewhere"
            )
        setattr(layout, kind, [p for p in chosen if _exists(p, layout, name)])
    skills = [root / "skills"] if (root / "skills").is_dir() else []
    for where, data in sources:
        if "skills" in data:
            skills += _paths(root, data["skills"], f"{name}: {where}: skills", allow_dot=True)
    if not skills and (root / "SKILL.md").is_file():
        skills = [root]
    layout.skills = [p for p in dict.fromkeys(skills) if _exists(p, layout, name)]
    layout.hooks = _configs(root, name, "hooks", Path("hooks") / "hooks.json", sources)
    layout.mcp = _configs(root, name, "mcpServers", Path(".mcp.json"), sources)
    for where, data in sources:
        for key, what in UNUSED_KEYS.items():
            if key in data:
                layout.unused.append(f"{what} ({where}: {key})")
    for relative, what in UNUSED_PATHS.items():
        if (root / relative).exists():
            layout.unused.append(f"{what} ({relative})")
    return layout


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _exists(path: Path, layout: Layout, name: str) -> bool:
    if path.exists():
        return True
    layout.problems.append(f"{name}: {path.relative_to(layout.root)}: no such file or folder")
    return False


def _configs(
    root: Path, name: str, key: str, default: Path, sources: list[tuple[str, dict[str, Any]]]
) -> list[Config]:
    """The hooks or MCP configurations: the default file, then each one the manifest and
    the entry name or hold inline (a file named twice is read once)."""
    found: list[Config] = []
    files: list[Path] = [root / default] if (root / default).is_file() else []
    for where, data in sources:
        value = data.get(key)
        if value is None:
            continue
        if isinstance(value, dict):
            found.append(Config(f"{where}: {key}", value))
            continue
        files += _paths(root, value, f"{name}: {where}: {key}")
    seen: set[Path] = set()
    for path in files:
        real = path.resolve()
        if real in seen:
            continue
        seen.add(real)
        relative = path.relative_to(root).as_posix()
        data = _json(path, f"{name}: {relative}")
        if not isinstance(data, dict):
            raise KetchError(f"{name}: {relative} is not a JSON object")
        found.append(Config(relative, data))
    return found


def hook_events(config: Config) -> dict[str, Any]:
    """A hooks configuration's events (``{"hooks": {EVENT: [...]}}`` or the events
    themselves, inline)."""
    inner = config.data.get("hooks")
    return inner if isinstance(inner, dict) else config.data


def mcp_servers(config: Config) -> dict[str, Any]:
    """An MCP configuration's servers (``{"mcpServers": {...}}``, or the servers
    themselves, as several plugins write ``.mcp.json``)."""
    inner = config.data.get("mcpServers")
    if isinstance(inner, dict):
        return inner
    return {k: v for k, v in config.data.items() if isinstance(v, dict)}
