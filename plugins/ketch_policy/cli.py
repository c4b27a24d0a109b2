"""Per-run rules on the command line: ``--allow/--ask/--deny RULE`` (the config's rule
syntax) and Claude Code's ``--allowedTools/--disallowedTools`` spellings, mapped.

They form the command line's layer of ``[permissions]`` (``[permissions.run]``): added
to the rules of the config files, never replacing them, and like every rule, below the
hard guards. A spelling that cannot be mapped is refused (exit 2) with one line, never
dropped: a dropped deny rule would widen authority.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from ketch.errors import UsageError

# Claude Code tool -> ketch rule name (file tools take a path spec, shell a command).
CLAUDE_TOOLS = {
    "Bash": "shell",
    "Read": "read",
    "Edit": "write",
    "Write": "write",
    "MultiEdit": "write",
    "NotebookEdit": "write",
    "WebFetch": "web",
    "Glob": "glob",
    "Grep": "grep",
    "LS": "list_dir",
}
_CLAUDE = re.compile(r"^(?P<tool>[A-Za-z][A-Za-z0-9_]*)(?:\((?P<spec>.*)\))?$", re.S)


class MappingError(ValueError):
    pass


def split_list(text: str) -> list[str]:
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


def _path_spec(spec: str) -> str:
    """Claude's gitignore-style path forms: ``//abs`` is the filesystem root, ``~/`` the
    home, ``/path`` and ``./path`` and ``path`` the project (the workspace)."""
    if spec.startswith("//"):
        return spec[1:]
    if spec.startswith("/"):
        return spec[1:] or "**"
    return spec[2:] or "**" if spec.startswith("./") else spec


def from_claude(entry: str) -> str:
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
    name = CLAUDE_TOOLS.get(tool)
    if name is None:
        raise MappingError(f"'{entry}': ketch has no equivalent of Claude Code's {tool} tool")
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
    return f"{name}({_path_spec(spec)})"


def checked(rule: str, source: str) -> str:
    from ketch_policy_kit.rules import RuleError, parse_rule

    try:
        parse_rule(rule)
    except RuleError as exc:
        raise UsageError(f"{source}: {exc}") from None
    return rule


class RuleAction(argparse.Action):
    """Collects rules into ``namespace.layer_settings`` (the command line's layer)."""

    def __init__(self, *args: Any, decision: str, claude: bool = False, **kwargs: Any) -> None:
        self.decision, self.claude = decision, claude
        super().__init__(*args, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        text = str(values)
        if self.claude:
            try:
                rules = [from_claude(item) for item in split_list(text)]
            except MappingError as exc:
                raise UsageError(
                    f"{option_string}: {exc}; write a ketch rule with --allow/--ask/--deny instead (docs/permissions.md)"
                ) from None
            if not rules:
                raise UsageError(f"{option_string}: no rule given")
        else:
            rules = [text]
        layer = getattr(namespace, "layer_settings", None)
        if not isinstance(layer, dict):
            layer = {}
            namespace.layer_settings = layer
        run = layer.setdefault("permissions", {}).setdefault("run", {})
        for rule in rules:
            run.setdefault(self.decision, []).append(checked(rule, f"{option_string} {text!r}"))


OPTIONS = [
    (
        ("--allow",),
        "allow",
        False,
        "RULE",
        "allow calls matching RULE (repeatable), e.g. 'shell(git diff:*)', 'write(notes.md)'",
    ),
    (("--ask",), "ask", False, "RULE", "ask before calls matching RULE (repeatable)"),
    (("--deny",), "deny", False, "RULE", "deny calls matching RULE (repeatable)"),
    (
        ("--allowedTools", "--allowed-tools"),
        "allow",
        True,
        "RULES",
        "Claude Code spellings, mapped to allow rules: 'Bash(git status),Read(./src/**)'",
    ),
    (
        ("--disallowedTools", "--disallowed-tools"),
        "deny",
        True,
        "RULES",
        "Claude Code spellings, mapped to deny rules",
    ),
]


def add_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "permissions for this run (added to the config's [permissions])"
    )
    for names, decision, claude, metavar, text in OPTIONS:
        group.add_argument(
            *names,
            action=RuleAction,
            decision=decision,
            claude=claude,
            metavar=metavar,
            default=argparse.SUPPRESS,
            help=text,
        )
    # Other agents' spellings of "ask nothing": named, and pointed to ketch's.
    for spelling in FOREIGN_FULL_ACCESS:
        parser.add_argument(spelling, action=_Spelling, nargs=0, help=argparse.SUPPRESS)


FOREIGN_FULL_ACCESS = ("--yolo", "--dangerously-skip-permissions")


class _Spelling(argparse.Action):
    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        parser.error(
            f"{option} is another agent's option: `--profile full-access` runs every call without asking "
            "(the hard guards and the sandbox still apply)"
        )
