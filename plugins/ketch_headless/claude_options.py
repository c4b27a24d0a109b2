"""The options ``claude -p`` and the Agent SDK pass, on ketch's command line.

The Agent SDK starts its CLI with an argv it builds itself (``--output-format
stream-json --verbose --system-prompt "" --permission-mode ... --input-format
stream-json``, see docs/claude-code.md for the whole list); ketch accepts every one of
them, so ``cli_path`` can point at ketch unchanged. Each either means what it means in
Claude Code, or is accepted and said (one notice line) to do nothing here; none of them
reaches past ketch's deny rules, hard guards or sandbox.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ketch.api import UsageError, positive_int

# Accepted and reported as having no effect in ketch (flag -> why).
IGNORED: dict[str, str] = {
    "fallback_model": "ketch retries the same model (its provider's retry policy)",
    "betas": "ketch sends no beta headers of its own choosing",
    "task_budget": "ketch has no task budget",
    "plugin_dir": "Claude Code plugins are not loaded this way (ketch's plugins are pip packages)",
    "thinking": "reasoning is the provider's and the model's setting in ketch's config",
    "max_thinking_tokens": "reasoning is the provider's and the model's setting in ketch's config",
    "thinking_display": "reasoning is streamed as it comes",
    "effort": "reasoning effort is the provider's setting in ketch's config",
    "json_schema": "ketch has no structured-output mode",
    "session_mirror": "sessions live in ketch's encrypted store",
    "resume_session_at": "use `ketch sessions rewind`",
    "resume_drops_turn": "use `ketch sessions rewind`",
    "fork_session": "a resumed session goes on as itself",
    "session_id": "ketch names its sessions itself (ses_…)",
    "strict_mcp_config": "ketch also starts the MCP servers of its own config",
    "setting_sources": "ketch reads its own config layers and .claude/ files by its own rules",
    "max_budget_usd": "ketch sets no spending limit (the cost is in total_cost_usd)",
    "include_hook_events": "hook problems are said as notices",
}


class LayerAction(argparse.Action):
    """An option that adds to the command line's settings layer (``layer_settings``,
    which ``cli_settings`` merges): subclasses implement ``apply``."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        layer = getattr(namespace, "layer_settings", None)
        if not isinstance(layer, dict):
            layer = namespace.layer_settings = {}
        notes = getattr(namespace, "claude_notices", None)
        if not isinstance(notes, list):
            notes = namespace.claude_notices = []
        self.apply(namespace, layer, notes, values, str(option_string))

    def apply(
        self,
        namespace: argparse.Namespace,
        layer: dict[str, Any],
        notes: list[str],
        values: Any,
        option: str,
    ) -> None:  # pragma: no cover - every subclass implements it
        raise NotImplementedError

    @staticmethod
    def run_rules(layer: dict[str, Any]) -> dict[str, list[str]]:
        """This run's ``[permissions]`` rules (the policy's ``[permissions.run]``)."""
        run: dict[str, list[str]] = layer.setdefault("permissions", {}).setdefault("run", {})
        return run


class PermissionModeAction(LayerAction):
    """``--permission-mode MODE`` / ``--dangerously-skip-permissions``: ketch's mode and
    profile for this run."""

    def apply(self, namespace: Any, layer: Any, notes: Any, values: Any, option: str) -> None:
        from ketch_claude_kit.permission_modes import mapping

        name = "bypassPermissions" if option == "--dangerously-skip-permissions" else str(values)
        try:
            found = mapping(name)
        except ValueError as exc:
            raise UsageError(f"{option}: {exc}") from None
        namespace.permission_mode = name
        layer["mode"] = found.mode
        if found.profile is not None:
            layer["profile"] = found.profile


class McpConfigAction(LayerAction):
    """``--mcp-config JSON|PATH``: its stdio and HTTP servers join ``[mcp_servers]`` for
    this run; ``"type": "sdk"`` servers are the SDK program's (served over the control
    protocol)."""

    def apply(self, namespace: Any, layer: Any, notes: Any, values: Any, option: str) -> None:
        import os

        from ketch_claude_kit.mcp_config import convert

        converted = convert(json_or_file(str(values), option), os.environ, option)
        if converted.servers:
            layer.setdefault("mcp_servers", {}).update(converted.servers)
        namespace.sdk_mcp_servers = {
            **(getattr(namespace, "sdk_mcp_servers", None) or {}),
            **converted.sdk,
        }
        notes.extend(converted.problems)


class AddDirAction(LayerAction):
    """``--add-dir DIR``: reads under DIR are allowed (an allow rule of this run); a write
    outside the workspace still asks (a hard guard), which no program can approve."""

    def apply(self, namespace: Any, layer: Any, notes: Any, values: Any, option: str) -> None:
        directory = Path(str(values)).expanduser().resolve()
        if not directory.is_dir():
            raise UsageError(f"{option} {values}: not a directory")
        self.run_rules(layer).setdefault("allow", []).append(f"read({directory})")


class SettingsAction(LayerAction):
    """``--settings JSON|PATH``: a Claude Code settings object's permissions, mode and
    hooks for this run (the command line's layer, like ``--allow``); what has no ketch
    form is said, one notice each."""

    def apply(self, namespace: Any, layer: Any, notes: Any, values: Any, option: str) -> None:
        from ketch_claude_kit.settings_import import from_settings

        data = json_or_file(str(values), option)
        if not isinstance(data, dict):
            raise UsageError(f"{option}: not a settings object")
        plan = from_settings(Path(option), data, user=False)
        run = self.run_rules(layer)
        for decision, rules in plan.rules.items():
            run.setdefault(decision, []).extend(rules)
        for key, value in (("mode", plan.mode), ("profile", plan.profile)):
            if value is not None:
                layer[key] = value
        hooks = layer.setdefault("hooks", {})
        for event, table in plan.hooks:
            hooks.setdefault(event, []).append(table)
        notes.extend(f"{option}: {line}" for line in plan.left_out)


def add_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "Claude Code's headless options (docs/claude-code.md): the Agent SDK's argv works unchanged"
    )
    add = group.add_argument
    add(
        "--stream-schema",
        choices=["ketch", "claude"],
        help="stream-json/json output in ketch's event schema (default) or Claude Code's messages "
        "(the ketch-claude command sets claude)",
    )
    add("--verbose", action="store_true", help="accepted (stream-json is always complete)")
    add("--system-prompt", metavar="TEXT", help="instructions added to ketch's system prompt")
    add("--system-prompt-file", metavar="PATH", help="the same, read from a file")
    add("--append-system-prompt", metavar="TEXT", help="instructions added at the end")
    add("--append-system-prompt-file", metavar="PATH", help="the same, read from a file")
    add(
        "--tools",
        metavar="LIST",
        help='only these tools (Claude Code\'s or ketch\'s names); "" none, "default" all',
    )
    add(
        "--max-turns",
        dest="max_iterations",
        type=positive_int,
        metavar="N",
        help="the same as --max-iterations",
    )
    add(
        "--permission-mode",
        action=PermissionModeAction,
        metavar="MODE",
        help="default, acceptEdits, plan, bypassPermissions, dontAsk or auto, mapped to ketch's "
        "mode and profile (the hard guards and deny rules always apply)",
    )
    add(
        "--dangerously-skip-permissions",
        action=PermissionModeAction,
        nargs=0,
        help="the same as --permission-mode bypassPermissions: full-access, still guarded and sandboxed",
    )
    add(
        "--permission-prompt-tool",
        metavar="stdio",
        help="stdio: ask the Agent SDK program (can_use_tool) over the control protocol",
    )
    add(
        "--mcp-config",
        action=McpConfigAction,
        metavar="JSON|PATH",
        help='MCP servers in Claude Code\'s {"mcpServers": {...}} shape (repeatable)',
    )
    add(
        "--add-dir",
        action=AddDirAction,
        metavar="DIR",
        help="allow reading DIR (writes outside the workspace still ask, as a hard guard)",
    )
    add(
        "--settings",
        action=SettingsAction,
        metavar="JSON|PATH",
        help="a Claude Code settings object for this run: its permissions, mode and hooks",
    )
    add(
        "--include-partial-messages", action="store_true", help="stream_event lines (claude schema)"
    )
    add("--replay-user-messages", action="store_true", help="echo each user message back")
    add("--await-initialize", action="store_true", help=argparse.SUPPRESS)  # TypeScript SDK
    for flag in IGNORED:
        spelled = "--" + flag.replace("_", "-")
        if flag in ("fork_session", "strict_mcp_config", "session_mirror", "include_hook_events"):
            add(spelled, action="store_true", help=argparse.SUPPRESS)
        elif flag in ("plugin_dir",):
            add(spelled, action="append", help=argparse.SUPPRESS)
        else:
            add(spelled, help=argparse.SUPPRESS)


def ignored_notices(args: argparse.Namespace) -> list[str]:
    """One line per option given that does nothing in ketch."""
    notes = []
    for flag, why in IGNORED.items():
        value = getattr(args, flag, None)
        if value not in (None, False, []):
            notes.append(f"--{flag.replace('_', '-')} has no effect in ketch: {why}")
    return notes


def read_text_option(value: str | None, file: str | None, what: str) -> str:
    """The text of ``--X`` or ``--X-file`` (a file that cannot be read is a usage error)."""
    parts = [value] if value else []
    if file:
        try:
            parts.append(Path(file).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{what}-file {file}: cannot be read ({exc})") from None
    return "\n\n".join(p.strip() for p in parts if p and p.strip())


def json_or_file(value: str, what: str) -> Any:
    """A JSON value given inline or as a file path (Claude Code accepts both)."""
    text = value.strip()
    if not text.startswith("{"):
        try:
            text = Path(value).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{what} {value}: cannot be read ({exc})") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{what}: not valid JSON ({exc})") from None
