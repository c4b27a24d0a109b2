"""Claude Code's permission rules as ketch rules.

``Bash(npm run test:*)`` is ``shell(npm run test:*)``, ``Read(./src/**)`` is
``read(src/**)``, ``WebFetch(domain:docs.python.org)`` is ``web(docs.python.org)``,
``mcp__github`` is ``mcp__github__*``. A rule with no faithful ketch equivalent raises
:class:`MappingError` with one line saying why: callers report it and never drop it
silently (a dropped deny rule would widen authority). The tool names come from the one
table (:mod:`ketch_claude_kit.tool_names`).
"""

from __future__ import annotations

import re

from ketch_claude_kit.tool_names import lookup, why_unmapped

_CLAUDE = re.compile(r"^(?P<tool>[A-Za-z][A-Za-z0-9_]*)(?:\((?P<spec>.*)\))?$", re.S)


class MappingError(ValueError):
    pass


def split_rules(text: str) -> list[str]:
    """``"Bash(git log:*),Read Edit"`` -> three entries: commas and blanks separate,
    except inside parentheses."""
    items: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        if depth == 0 and (char == "," or char.isspace()):
            if current:
                items.append("".join(current))
                current = []
            continue
        current.append(char)
    if depth:
        raise MappingError(f"'{text}': a '(' is not closed")
    if current:
        items.append("".join(current))
    return items


def _path_spec(spec: str, home_of_slash: str | None = None) -> str:
    """Claude's gitignore-style path forms: ``//abs`` is the filesystem root, ``~/`` the
    home, ``./path`` and ``path`` the project (the workspace); ``/path`` is relative to
    the settings file's root: the project for project settings (the default), or
    ``home_of_slash`` (``~/.claude`` for the user's settings)."""
    if spec.startswith("//"):
        return spec[1:]
    if spec.startswith("/"):
        if home_of_slash is not None:
            return f"{home_of_slash.rstrip('/')}/{spec[1:]}" if spec[1:] else home_of_slash
        return spec[1:] or "**"
    return spec[2:] or "**" if spec.startswith("./") else spec


def from_claude(entry: str, *, home_of_slash: str | None = None) -> str:
    """One Claude Code permission rule as a ketch rule (MappingError when it has no
    faithful equivalent)."""
    entry = entry.strip()
    if entry.startswith("mcp__"):
        if not re.fullmatch(r"mcp__[A-Za-z0-9_.\-]+(__[A-Za-z0-9_.\-*]+)?", entry):
            raise MappingError(
                f"'{entry}' is not an MCP tool name (mcp__SERVER or mcp__SERVER__TOOL)"
            )
        return entry if entry.count("__") >= 2 else entry + "__*"
    match = _CLAUDE.match(entry)
    if not match:
        raise MappingError(f"'{entry}' is not a Claude Code rule (Tool or Tool(specifier))")
    tool, spec = match.group("tool"), match.group("spec")
    known = lookup(tool)
    name = known.rule if known is not None else None
    if name is None:
        reason = why_unmapped(tool) if known is not None else f"{tool} is not a Claude Code tool"
        raise MappingError(f"'{entry}': {reason}")
    if spec is None or spec.strip() in ("", "*"):
        return name
    spec = spec.strip()
    if tool == "Bash":
        if (
            re.match(r"^[a-z_]+:", spec)
            and not re.match(r"^\S+\s", spec)
            and not spec.endswith(":*")
        ):
            raise MappingError(
                f"'{entry}': parameter rules (Bash(param:value)) have no ketch equivalent"
            )
        body, open_ended = spec, False
        if body.endswith(":*") or body.endswith(" *"):
            body, open_ended = body[:-2].rstrip(), True
        if "*" in body:
            raise MappingError(
                f"'{entry}': ketch shell rules take '*' only at the end (Bash(git diff:*))"
            )
        return f"shell({body}{':*' if open_ended else ''})"
    if tool == "WebFetch":
        if not spec.startswith("domain:"):
            raise MappingError(f"'{entry}': only WebFetch(domain:HOST) maps to ketch (web(HOST))")
        return f"web({spec[len('domain:') :].strip()})"
    if name in ("read", "write", "glob", "grep", "list_dir"):
        return f"{name}({_path_spec(spec, home_of_slash)})"
    raise MappingError(
        f"'{entry}': ketch's {name} rules take no specifier like {spec!r}; write the bare {tool}"
    )
