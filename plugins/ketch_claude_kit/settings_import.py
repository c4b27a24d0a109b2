"""What a Claude Code settings file (and ``.mcp.json``) means in ketch's config.

One :class:`Plan` per source file: the ketch settings it would add and, one line each,
what cannot be brought over and why. Nothing here writes anything: the command that
uses it shows the plan, and writes only what the person confirms.

* ``permissions.allow / ask / deny``: ketch rules (:mod:`ketch_claude_kit.rules`); a
  rule with no faithful ketch form is left out and said (a deny rule left out is said
  loudest: ketch would allow what Claude Code denied, unless you write a rule);
* ``permissions.defaultMode``: ketch's ``mode`` and ``profile``
  (:mod:`ketch_claude_kit.permission_modes`);
* ``permissions.additionalDirectories``: ``read(DIR)`` allow rules (writes outside the
  workspace stay a hard guard's question);
* ``hooks``: ``[[hooks.EVENT]]`` tables (:mod:`ketch_claude_kit.hooks_import`);
* ``env``: not written anywhere (said, by name only: values are never shown or
  written, they may be credentials): ketch takes its environment from the shell that
  starts it, and keys from the keyring;
* ``.mcp.json``'s ``mcpServers``: ``[mcp_servers.NAME]`` tables; a server whose entry
  uses ``${VAR}`` is left out (ketch's config holds no variables, and their values
  must not be written to it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ketch_claude_kit.hooks_import import convert as convert_hooks
from ketch_claude_kit.mcp_config import convert as convert_mcp
from ketch_claude_kit.mcp_config import servers_of
from ketch_claude_kit.permission_modes import CLAUDE_MODES
from ketch_claude_kit.rules import MappingError, from_claude


@dataclass
class Plan:
    source: Path
    rules: dict[str, list[str]] = field(
        default_factory=lambda: {"allow": [], "ask": [], "deny": []}
    )
    mode: str | None = None
    profile: str | None = None
    hooks: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    mcp_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)  # one line each: what and why

    @property
    def empty(self) -> bool:
        return not (
            any(self.rules.values()) or self.mode or self.profile or self.hooks or self.mcp_servers
        )


def from_settings(path: Path, data: dict[str, Any], *, user: bool) -> Plan:
    """A ``settings.json``'s plan. ``user``: the user's own (``/path`` rules are then
    relative to ``~/.claude``, as Claude Code reads them)."""
    plan = Plan(path)
    home_of_slash = str(path.parent) if user else None
    permissions = data.get("permissions")
    if permissions is not None and not isinstance(permissions, dict):
        plan.left_out.append('"permissions" is not an object')
        permissions = None
    for decision in ("allow", "ask", "deny"):
        entries = (permissions or {}).get(decision) or []
        if not isinstance(entries, list):
            plan.left_out.append(f"permissions.{decision} is not a list")
            continue
        for entry in entries:
            try:
                rule = from_claude(str(entry), home_of_slash=home_of_slash)
            except MappingError as exc:
                loud = (
                    " (ketch does not deny it: write a ketch deny rule)"
                    if decision == "deny"
                    else ""
                )
                plan.left_out.append(f"permissions.{decision} {exc}{loud}")
                continue
            if rule not in plan.rules[decision]:
                plan.rules[decision].append(rule)
    default_mode = (permissions or {}).get("defaultMode")
    if default_mode is not None:
        found = CLAUDE_MODES.get(str(default_mode))
        if found is None:
            plan.left_out.append(
                f"permissions.defaultMode {default_mode!r} is not a Claude Code mode"
            )
        else:
            plan.mode = found.mode
            plan.profile = found.profile
            if found.note or found.never_ask:
                plan.left_out.append(
                    f"permissions.defaultMode {default_mode}: "
                    + (found.note or "ketch denies what it would ask only in headless runs")
                )
    directories = (permissions or {}).get("additionalDirectories") or []
    for directory in directories if isinstance(directories, list) else []:
        base = Path.home() if user else path.parent.parent
        resolved = (base / Path(str(directory)).expanduser()).resolve()
        rule = f"read({resolved})"
        if rule not in plan.rules["allow"]:
            plan.rules["allow"].append(rule)
    if directories:
        plan.left_out.append(
            "permissions.additionalDirectories: imported as read rules; a write outside the "
            "workspace still asks you (a hard guard)"
        )
    hooks = convert_hooks(path, data)
    plan.hooks = hooks.entries
    plan.left_out += [f"hooks: {line}" for line in hooks.skipped]
    env = data.get("env")
    if isinstance(env, dict) and env:
        names = ", ".join(sorted(str(k) for k in env))
        plan.left_out.append(
            f"env ({names}): ketch takes its environment from the shell that starts it "
            "(export them there); API keys go in the keyring (ketch auth set)"
        )
    for key in ("apiKeyHelper", "awsAuthRefresh", "statusLine", "enabledPlugins", "sandbox"):
        if key in data:
            plan.left_out.append(f"{key}: ketch has no such setting")
    return plan


def from_mcp(path: Path, data: Any, *, key: str = ".mcp.json") -> Plan:
    """The MCP servers of a ``.mcp.json`` (or ``~/.claude.json``'s ``mcpServers``)."""
    plan = Plan(path)
    servers = servers_of(data)
    if servers is None:
        if isinstance(data, dict) and key == ".mcp.json":
            plan.left_out.append(f'{key}: no "mcpServers" object')
        return plan
    usable = {}
    for name, entry in servers.items():
        if "${" in json.dumps(entry):
            plan.left_out.append(
                f"MCP server {name!r}: its entry uses ${{VAR}}; ketch's config holds no variables "
                "and must not hold their values: add [mcp_servers."
                f"{name}] yourself"
            )
            continue
        usable[name] = entry
    converted = convert_mcp({"mcpServers": usable}, {}, f"{key}")
    plan.mcp_servers = converted.servers
    plan.left_out += converted.problems
    plan.left_out += [
        f"MCP server {n!r}: an SDK server lives in its program" for n in converted.sdk
    ]
    return plan
