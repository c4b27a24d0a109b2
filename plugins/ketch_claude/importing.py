"""``ketch import claude [--project | --user] [--dry-run | --yes]``.

Sources: the project's ``.claude/settings.json``, ``.claude/settings.local.json`` and
``.mcp.json`` (into the workspace's ``.ketch/config.toml``, where workspace trust
applies to them as to anything a repository holds), and your own
``~/.claude/settings.json`` and ``~/.claude.json``'s MCP servers (into your
``config.toml``). Everything that would be written is shown first, with every item
that cannot be brought over and why; nothing is written without ``--yes`` or a "y" at
the terminal. Items already in the config are not written again; a profile or mode
the config already sets is kept. The file is rewritten in place (its comments and
layout kept), atomically, and only with text that still parses.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.api import KetchError, UsageError
from ketch_claude_kit.config_files import write_atomically

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel
    from ketch_claude_kit.settings_import import Plan


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="claude", help="what to import from (claude)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--project", action="store_true", help="only this project's .claude/ files and .mcp.json"
    )
    which.add_argument(
        "--user", action="store_true", help="only your ~/.claude/settings.json and ~/.claude.json"
    )
    when = parser.add_mutually_exclusive_group()
    when.add_argument(
        "--dry-run", action="store_true", help="show what would be imported; write nothing"
    )
    when.add_argument("--yes", action="store_true", help="write it without asking")


def claude_home(environ: dict[str, str]) -> Path:
    return Path(environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")


def read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise KetchError(
            f"cannot read {path}: {exc.strerror or exc}; nothing was imported"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise KetchError(
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); nothing was imported"
        ) from None


@dataclass
class Target:
    path: Path
    scope: str  # "project" or "user"
    plans: list[Plan] = field(default_factory=list)


def gather(kernel: Kernel, args: argparse.Namespace) -> list[Target]:
    from ketch.api import user_config_file, workspace_config_file
    from ketch_claude_kit.settings_import import from_mcp, from_settings

    targets = []
    if not args.user:
        project = Target(workspace_config_file(kernel.workspace), "project")
        for name in ("settings.json", "settings.local.json"):
            source = kernel.workspace / ".claude" / name
            if source.is_file():
                data = read_json(source)
                if not isinstance(data, dict):
                    raise KetchError(f"{source}: not a settings object; nothing was imported")
                project.plans.append(from_settings(source, data, user=False))
        mcp = kernel.workspace / ".mcp.json"
        if mcp.is_file():
            project.plans.append(from_mcp(mcp, read_json(mcp)))
        targets.append(project)
    if not args.project:
        home = claude_home(kernel.environ)
        user = Target(user_config_file(), "user")
        settings = home / "settings.json"
        if settings.is_file():
            data = read_json(settings)
            if not isinstance(data, dict):
                raise KetchError(f"{settings}: not a settings object; nothing was imported")
            user.plans.append(from_settings(settings, data, user=True))
        state = (
            (home / ".claude.json")
            if kernel.environ.get("CLAUDE_CONFIG_DIR")
            else Path.home() / ".claude.json"
        )
        if state.is_file():
            user.plans.append(from_mcp(state, read_json(state), key="~/.claude.json"))
        targets.append(user)
    return targets


def apply(target: Target, text: str) -> tuple[str, list[str], list[str]]:
    """The config text with the plans added (tomlkit keeps the file's comments and
    layout), what was added (one line each), and what was kept as the config had it."""
    import tomlkit

    doc = tomlkit.parse(text)
    added: list[str] = []
    kept: list[str] = []
    for plan in target.plans:
        for decision, rules in plan.rules.items():
            if not rules:
                continue
            permissions = doc.setdefault("permissions", tomlkit.table())
            current = permissions.setdefault(decision, tomlkit.array())
            for rule in rules:
                if rule not in current:
                    current.append(rule)
                    added.append(f"permissions.{decision} += {rule!r}   (from {plan.source})")
        for key, value in (("mode", plan.mode), ("profile", plan.profile)):
            if value is None:
                continue
            if key in doc and doc[key] != value:
                kept.append(f"{key} = {doc[key]!r} kept ({plan.source} says {value!r})")
            elif key not in doc:
                doc[key] = value
                added.append(f"{key} = {value!r}   (from {plan.source})")
        if plan.hooks:
            hooks = doc.setdefault("hooks", tomlkit.table())
            for event, table in plan.hooks:
                entries = hooks.setdefault(event, tomlkit.aot())
                if any(_same_hook(existing, table) for existing in entries):
                    continue
                item = tomlkit.table()
                for key, value in table.items():
                    item[key] = value
                entries.append(item)
                shown = " ".join([table["command"], *table.get("args", [])])
                added.append(
                    f"[[hooks.{event}]] matcher = {table['matcher']!r}, command = {shown!r}   (from {plan.source})"
                )
        if plan.mcp_servers:
            servers = doc.setdefault("mcp_servers", tomlkit.table())
            for name, table in plan.mcp_servers.items():
                if name in servers:
                    kept.append(
                        f"[mcp_servers.{name}] kept as configured ({plan.source} has one too)"
                    )
                    continue
                item = tomlkit.table()
                for key, value in table.items():
                    item[key] = value
                servers[name] = item
                what = table.get("url") or " ".join([table["command"], *table.get("args", [])])
                added.append(f"[mcp_servers.{name}] {what!r}   (from {plan.source})")
    return tomlkit.dumps(doc), added, kept


def _same_hook(existing: Any, table: dict[str, Any]) -> bool:
    return (
        existing.get("matcher", "*") == table.get("matcher", "*")
        and existing.get("command") == table.get("command")
        and list(existing.get("args") or []) == list(table.get("args") or [])
    )


def confirm(question: str) -> bool:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return False
    sys.stdout.write(f"{question} [y/N] ")
    sys.stdout.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def run(kernel: Kernel, args: argparse.Namespace) -> int:
    if args.source != "claude":
        raise UsageError(
            f"ketch import {args.source}: ketch imports from claude (ketch import claude)"
        )
    targets = [t for t in gather(kernel, args) if t.plans]
    if not targets:
        print(
            "ketch: no Claude Code settings found (.claude/settings.json, .claude/settings.local.json, "
            ".mcp.json, ~/.claude/settings.json, ~/.claude.json)",
            file=sys.stderr,
        )
        return 1
    writes: list[tuple[Target, str]] = []
    for target in targets:
        try:
            current = target.path.read_text(encoding="utf-8") if target.path.exists() else ""
            tomllib.loads(current)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise KetchError(f"{target.path}: {exc}; fix it first, nothing was imported") from None
        text, added, kept = apply(target, current)
        tomllib.loads(text)  # never write what would not parse
        print(f"{target.scope}: into {target.path}")
        for line in added:
            print(f"  + {line}")
        for line in kept:
            print(f"  = {line}")
        for plan in target.plans:
            for line in plan.left_out:
                print(f"  - not imported: {plan.source}: {line}")
        if not added:
            print("  (nothing new to add)")
        elif target.scope == "project":
            print("  workspace items apply once you trust each of them (ketch trust lists them)")
        if added:
            writes.append((target, text))
    if not writes:
        return 0
    if args.dry_run:
        print("dry run: nothing was written")
        return 0
    if not args.yes and not confirm(f"write these to {', '.join(str(t.path) for t, _ in writes)}?"):
        print("nothing was written (confirm at the terminal, or pass --yes)", file=sys.stderr)
        return 1
    for target, text in writes:
        write_atomically(target.path, text)
        print(f"wrote {target.path}")
    return 0
