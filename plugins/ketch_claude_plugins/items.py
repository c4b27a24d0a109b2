"""An installed plugin as ketch uses it: its folders for the commands, skills and agents
readers, its hooks and MCP servers as ketch tables, and every part that runs something
as a trust item pinned in the plugin's own scope.

Items: each hook handler and each MCP server (built here), each ``!`cmd``` line, skill
with scripts and agent definition (built by the plugin that reads them, through
``claude_plugins_folder_items``, exactly as it builds them before running one). A
hook's or server's item covers, besides what it is written as and the files its command
line names, every program file of the plugin (executable, a script's suffix, or
``#!``): a hook script that imports a sibling module is held back when that module
changes too.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch_claude_kit.mcp_config import shows
from ketch_claude_plugins.bundle import Layout, hook_events, mcp_servers

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel
    from ketch_prompt_kit.markdown_files import Folder
    from ketch_trust_kit import TrustItem, TrustScope

KINDS = ("commands", "skills", "agents")
MAX_PROGRAMS = 5_000


@dataclass
class HookEntry:
    event: str
    item: TrustItem | None  # None: ketch does not run it (``note`` says why)
    table: dict[str, Any] | None = None  # the [[hooks.EVENT]] table it runs as
    note: str = ""


@dataclass
class ServerEntry:
    name: str  # ketch's name: plugin_<plugin>_<server>
    written: str  # the plugin's own name for it
    entry: dict[str, Any]  # as the plugin writes it
    item: TrustItem | None
    note: str = ""


def server_name(plugin: str, server: str) -> str:
    """Claude Code's name for a plugin's server (its tools are ``mcp__plugin_P_S__T``)."""
    return f"plugin_{plugin}_{server}"


def is_program(path: Path) -> bool:
    from ketch_trust_kit.items import SCRIPT_SUFFIXES

    if path.suffix in SCRIPT_SUFFIXES or os.access(path, os.X_OK):
        return True
    try:
        with open(path, "rb") as handle:
            return handle.read(2) == b"#!"
    except OSError:
        return False


def programs_digest(root: Path) -> str:
    """One digest of every program file of the plugin (path and content)."""
    from ketch_trust_kit import file_digest

    digest = hashlib.sha256()
    count = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(files):
            path = Path(folder) / name
            if path.is_symlink() or not is_program(path):
                continue
            count += 1
            if count > MAX_PROGRAMS:
                digest.update(b"...too many programs")
                return digest.hexdigest()
            digest.update(f"{path.relative_to(root).as_posix()}={file_digest(path)}\n".encode())
    return digest.hexdigest()


@dataclass
class Bundle:
    """One plugin's files at ``root`` (installed, or staged for review), named ``id``
    (``name@marketplace``), with its pin file and data folder."""

    id: str
    name: str
    root: Path
    data: Path
    pins: Path
    layout: Layout
    notes: list[str] = field(default_factory=list)

    @cached_property
    def scope(self) -> TrustScope:
        from ketch_trust_kit import TrustScope

        return TrustScope(self.root, self.pins, f"`ketch plugin trust {self.id}`")

    # --- the readers' folders ----------------------------------------------------------

    def folders(self, kind: str) -> list[Folder]:
        """The folders of ``kind`` (commands, skills, agents) this plugin hands the
        reader of that kind: namespaced, with its root, data folder and trust scope."""
        from ketch_prompt_kit.markdown_files import Folder

        base = {
            "label": f"plugin {self.id}",
            "users_own": False,
            "namespace": self.name,
            "plugin_root": self.root,
            "plugin_data": self.data,
            "trust": self.scope,
        }
        found: list[Folder] = []
        singles: dict[Path, list[Path]] = {}
        for path in getattr(self.layout, kind):
            if kind == "skills" and (path / "SKILL.md").is_file():
                singles.setdefault(path.parent, []).append(path / "SKILL.md")
            elif path.is_dir():
                found.append(Folder(path=path, **base))  # type: ignore[arg-type]
            elif path.suffix == ".md":
                singles.setdefault(path.parent, []).append(path)
        for parent, files in singles.items():
            found.append(Folder(path=parent, files=tuple(files), **base))  # type: ignore[arg-type]
        return found

    def names(self, kind: str) -> list[str]:
        """What the person types or the model names: ``/plugin:command``, skills,
        ``plugin:agent``."""
        from ketch_prompt_kit.markdown_files import read

        found = []
        for folder in self.folders(kind):
            if kind == "skills":
                for path in folder.paths("*/SKILL.md", recursive=False):
                    found.append(folder.named(path.parent.name.lower()))
                continue
            for path in folder.paths("*.md"):
                if kind == "commands":
                    parts = path.relative_to(folder.path).with_suffix("").parts
                    found.append(folder.named(":".join(p.lower() for p in parts)))
                else:
                    markdown = read(path, folder)
                    meta = markdown.meta if markdown is not None else {}
                    found.append(folder.named(str(meta.get("name") or path.stem).strip()))
        return found

    # --- hooks and MCP servers -----------------------------------------------------------

    def programs(self) -> str:
        return programs_digest(self.root)

    def hooks(self, programs: str | None = None, *, event: str | None = None) -> list[HookEntry]:
        """Every hook handler of the plugin (of ``event`` only, when given), as ketch
        would run it (or why not). The program files are digested only when a handler
        needs it (a plugin without hooks of an event costs nothing when it fires)."""
        from ketch_claude_kit.hooks_import import EVENTS, map_handler, map_matcher
        from ketch_trust_kit import make_item

        wanted = event
        found: list[HookEntry] = []
        for config in self.layout.hooks:
            events = hook_events(config)
            for event, groups in events.items():
                if event == "description" or wanted not in (None, event):
                    continue
                if event not in EVENTS:
                    found.append(
                        HookEntry(
                            event, None, note=f"{config.source}: {event}: ketch has no such event"
                        )
                    )
                    continue
                for g, group in enumerate(groups if isinstance(groups, list) else []):
                    if not isinstance(group, dict):
                        continue
                    matcher, dropped = map_matcher(event, group.get("matcher"))
                    for h, handler in enumerate(group.get("hooks") or []):
                        label = f"{event} #{g + 1}.{h + 1}"
                        if matcher is None:
                            found.append(
                                HookEntry(
                                    event,
                                    None,
                                    note=f"{config.source}: {label}: its matcher names no tool ketch has ({', '.join(dropped)})",
                                )
                            )
                            continue
                        table, problem = map_handler(handler, plugin=True)
                        if table is None:
                            found.append(
                                HookEntry(event, None, note=f"{config.source}: {label}: {problem}")
                            )
                            continue
                        if programs is None:
                            programs = self.programs()
                        command = table["command"]
                        args = table.get("args")
                        line = " ".join([command, *args]) if args else command
                        item = make_item(
                            "hook",
                            label,
                            config.source,
                            {
                                "event": event,
                                "matcher": group.get("matcher"),
                                "handler": handler,
                                "programs": programs,
                            },
                            f"on {event} (matcher {group.get('matcher') or '*'}): {line}",
                            workspace=self.root,
                            command=[command, *args] if args else command,
                        )
                        table = {
                            **table,
                            "matcher": matcher,
                            "plugin_root": str(self.root),
                            "plugin_data": str(self.data),
                        }
                        found.append(
                            HookEntry(
                                event,
                                item,
                                table,
                                note=f"{config.source}: {label}: {problem}" if problem else "",
                            )
                        )
        return found

    def servers(self, programs: str | None = None) -> list[ServerEntry]:
        """Every MCP server of the plugin, named as Claude Code names them."""
        from ketch_trust_kit import make_item

        programs = programs if programs is not None else self.programs()
        found: list[ServerEntry] = []
        for config in self.layout.mcp:
            for written, entry in mcp_servers(config).items():
                name = server_name(self.name, str(written))
                if not isinstance(entry, dict):
                    found.append(
                        ServerEntry(
                            name,
                            str(written),
                            {},
                            None,
                            f"{config.source}: {written}: not an object",
                        )
                    )
                    continue
                if "${user_config." in repr(entry):
                    found.append(
                        ServerEntry(
                            name,
                            str(written),
                            entry,
                            None,
                            f"{config.source}: {written}: names ${{user_config.*}}, which ketch does not ask for",
                        )
                    )
                    continue
                command = entry.get("command")
                args = _strings(entry.get("args"))
                item = make_item(
                    "MCP server",
                    name,
                    config.source,
                    {"server": entry, "programs": programs},
                    shows(entry),
                    workspace=self.root,
                    command=[command, *args] if isinstance(command, str) else None,
                )
                found.append(ServerEntry(name, str(written), entry, item))
        return found

    def server_table(
        self, entry: ServerEntry, environ: dict[str, str]
    ) -> tuple[dict[str, Any] | None, list[str]]:
        """ketch's ``[mcp_servers.NAME]`` table of a server: ``${CLAUDE_PLUGIN_ROOT}``,
        ``${CLAUDE_PLUGIN_DATA}`` and the person's own ``${VAR}`` expanded, both
        plugin variables also in its environment."""
        from ketch_claude_kit.mcp_config import convert

        known = {
            **environ,
            "CLAUDE_PLUGIN_ROOT": str(self.root),
            "CLAUDE_PLUGIN_DATA": str(self.data),
        }
        converted = convert({"mcpServers": {entry.name: entry.entry}}, known, f"plugin {self.id}")
        table = converted.servers.get(entry.name)
        if table is not None and "command" in table:
            table["env"] = {
                "CLAUDE_PLUGIN_ROOT": str(self.root),
                "CLAUDE_PLUGIN_DATA": str(self.data),
                **table.get("env", {}),
            }
        return table, converted.problems

    # --- all of it ----------------------------------------------------------------------

    def items(self, kernel: Kernel) -> list[TrustItem]:
        """Every item of the plugin: its hooks, its MCP servers, then what the commands,
        skills and agents readers list for its folders."""
        from ketch_trust_kit import TrustItem

        programs = self.programs()
        found: list[TrustItem] = [e.item for e in self.hooks(programs) if e.item is not None]
        found += [e.item for e in self.servers(programs) if e.item is not None]
        if hasattr(kernel.pm.hook, "claude_plugins_folder_items"):
            for kind in KINDS:
                for folder in self.folders(kind):
                    for _, listed in kernel.hooks.call(
                        "claude_plugins_folder_items", kernel=kernel, kind=kind, folder=folder
                    ):
                        found += [i for i in listed if isinstance(i, TrustItem)]
        unique: dict[str, TrustItem] = {}
        for item in found:
            unique.setdefault(item.digest, item)
        return list(unique.values())

    def unused(self) -> list[str]:
        """What the plugin holds that ketch does not run or use, one line each."""
        lines = [f"not used by ketch: {u}" for u in self.layout.unused]
        lines += [e.note for e in self.hooks() if e.item is None or e.note]
        lines += [e.note for e in self.servers() if e.item is None]
        return lines + self.layout.problems + self.notes


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []
