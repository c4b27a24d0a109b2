"""Claude Code's MCP server entries (``.mcp.json``, ``--mcp-config``) as ketch's
``[mcp_servers.NAME]`` tables.

Claude Code: ``{"mcpServers": {"NAME": {"command", "args", "env"}}}`` for stdio
(``"type": "stdio"`` optional), ``{"type": "http" | "sse", "url", "headers"}`` for
remote servers, and, from the Agent SDK, ``{"type": "sdk", "name"}`` for a server the
SDK program hosts itself (served over the control protocol, not here). ketch:
``command``/``args``/``env`` or ``url``/``headers``. ``${VAR}`` and ``${VAR:-default}``
in these fields are expanded from the environment, as Claude Code does; a variable
that is not set (and has no default) is reported, never passed through.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass
class Converted:
    servers: dict[str, dict[str, Any]] = field(default_factory=dict)  # ketch's tables
    sdk: dict[str, dict[str, Any]] = field(default_factory=dict)  # hosted by the SDK program
    problems: list[str] = field(default_factory=list)  # one line each, nothing dropped silently


def expand_vars(text: str, environ: Mapping[str, str], missing: list[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        missing.append(name)
        return match.group(0)

    return _VAR.sub(replace, text)


def servers_of(data: Any) -> dict[str, Any] | None:
    """The server table of a ``.mcp.json`` / ``--mcp-config`` object (``mcpServers``)."""
    if not isinstance(data, dict):
        return None
    servers = data.get("mcpServers", data.get("mcp_servers"))
    return servers if isinstance(servers, dict) else None


def convert(data: Any, environ: Mapping[str, str], source: str) -> Converted:
    out = Converted()
    servers = servers_of(data)
    if servers is None:
        out.problems.append(f'{source}: no "mcpServers" object; no server taken')
        return out
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            out.problems.append(f"{source}: server {name!r} is not an object; skipped")
            continue
        kind = str(entry.get("type") or ("http" if entry.get("url") else "stdio")).lower()
        missing: list[str] = []

        def text(value: Any, missing: list[str] = missing) -> str:
            return expand_vars(str(value), environ, missing)

        if kind == "sdk":
            out.sdk[str(entry.get("name") or name)] = dict(entry)
            continue
        if kind == "stdio":
            command = entry.get("command")
            if not isinstance(command, str) or not command.strip():
                out.problems.append(f"{source}: server {name!r} has no command; skipped")
                continue
            table: dict[str, Any] = {"command": text(command)}
            args = entry.get("args") or []
            if not isinstance(args, list):
                out.problems.append(f"{source}: server {name!r}: args is not a list; skipped")
                continue
            table["args"] = [text(a) for a in args]
            env = entry.get("env") or {}
            if isinstance(env, dict) and env:
                table["env"] = {str(k): text(v) for k, v in env.items()}
        elif kind in ("http", "sse", "streamable-http"):
            url = entry.get("url")
            if not isinstance(url, str) or not url.strip():
                out.problems.append(f"{source}: server {name!r} has no url; skipped")
                continue
            table = {"url": text(url)}
            headers = entry.get("headers") or {}
            if isinstance(headers, dict) and headers:
                table["headers"] = {str(k): text(v) for k, v in headers.items()}
            if kind == "sse":
                out.problems.append(
                    f"{source}: server {name!r} uses the old SSE transport; ketch connects with streamable HTTP"
                )
        else:
            out.problems.append(
                f"{source}: server {name!r} has type {kind!r}, which ketch does not speak; skipped"
            )
            continue
        if missing:
            unset = ", ".join(sorted(set(missing)))
            out.problems.append(
                f"{source}: server {name!r} uses ${{{unset}}}, which is not set; skipped"
            )
            continue
        out.servers[str(name)] = table
    return out


def shows(table: dict[str, Any]) -> str:
    """What a server table starts (ketch's or Claude Code's), as the person reviews it:
    the command line or URL, the environment, the headers' names, and the rest."""
    parts = []
    if table.get("command"):
        args = table.get("args")
        listed = [str(a) for a in args] if isinstance(args, list) else []
        parts.append(" ".join([str(table["command"]), *listed]))
    if table.get("url"):
        parts.append(f"url {table['url']}")
    env = table.get("env")
    if isinstance(env, dict) and env:
        parts.append("env " + " ".join(f"{k}={v}" for k, v in env.items()))
    headers = table.get("headers")
    if isinstance(headers, dict) and headers:
        parts.append("headers " + ", ".join(str(k) for k in headers))
    rest = {k: v for k, v in table.items() if k not in ("command", "args", "url", "env", "headers")}
    if rest:
        parts.append(json.dumps(rest, sort_keys=True, default=str))
    return "; ".join(parts) or json.dumps(table, sort_keys=True, default=str)
