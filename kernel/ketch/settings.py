"""Typed settings, loaded in layers: defaults < user < workspace < environment < CLI.

The workspace layer (``.ketch/config.toml``) comes from the repository, which ketch
does not trust: until the user trusts the workspace, only keys that cannot raise
authority are read from it (see :data:`WORKSPACE_SAFE_KEYS`); the rest are ignored
with a notice. A layer that is corrupt or fails validation is reported with its path
and line and dropped, never fatal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ketch.config import Layer, deep_merge, line_of_key, read_layers


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow")


class PluginsSettings(_Section):
    disable: list[str] = Field(default_factory=list)
    # Allow-list form: only these (plus the essential set) load. None = all.
    only: list[str] | None = None


class PermissionsSettings(_Section):
    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


class HookCommand(_Section):
    matcher: str = "*"
    command: str
    timeout: float = 30.0


class McpServer(_Section):
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None


class LoopSettings(_Section):
    max_iterations: int = Field(100, ge=1)
    # The same call with the same input this many times in a row is refused.
    duplicate_call_limit: int = Field(3, ge=2)
    max_retries: int = Field(3, ge=0)
    max_output_tokens: int | None = None


class CompactionSettings(_Section):
    trigger: float = Field(0.70, gt=0, le=1)
    target: float = Field(0.50, gt=0, le=1)
    compactor: str = "deterministic"
    keep_recent_turns: int = Field(1, ge=1)
    # Old tool results larger than this (estimated tokens) are pruned first.
    prune_min_tokens: int = Field(200, ge=20)
    # A summary never takes more than this many tokens (it also fits the target).
    summary_max_tokens: int = Field(4_000, ge=200)
    # The model summarizer gives up after this many seconds (then the deterministic one runs).
    model_timeout: float = Field(120.0, gt=0)
    # Tools whose successful calls count as "files changed" (their path argument).
    changed_file_tools: list[str] = Field(default_factory=lambda: ["write_file", "edit_file", "multi_edit", "apply_patch", "create_file"])
    # When protected turns alone overflow, prune old tool outputs of the current turn
    # (never its latest step) instead of stopping.
    prune_current_turn: bool = True


class StorageSettings(_Section):
    encryption: Literal["on", "off"] = "on"


class Settings(BaseModel):
    """Every setting ketch reads. Plugins may keep their own tables (extra keys allowed)."""

    model_config = ConfigDict(extra="allow")

    default_provider: str | None = None
    provider: str | None = None  # chosen for this run (--provider / KETCH_PROVIDER)
    model: str | None = None
    mode: Literal["plan", "build"] = "build"
    profile: Literal["manual", "assisted", "full-access"] = "manual"
    providers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    plugins: PluginsSettings = Field(default_factory=PluginsSettings)
    permissions: PermissionsSettings = Field(default_factory=PermissionsSettings)
    hooks: dict[str, list[HookCommand]] = Field(default_factory=dict)
    mcp_servers: dict[str, McpServer] = Field(default_factory=dict)
    loop: LoopSettings = Field(default_factory=LoopSettings)
    compaction: CompactionSettings = Field(default_factory=CompactionSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    tools: dict[str, Any] = Field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any]:
        """A plugin's own table (``[NAME]``), as a dict (empty when absent)."""
        value = getattr(self, name, None)
        if value is None:
            value = (self.model_extra or {}).get(name)
        if isinstance(value, BaseModel):
            return value.model_dump()
        return dict(value) if isinstance(value, dict) else {}


# Keys a workspace config may set before the workspace is trusted: none of them can
# raise authority, change which code runs, or send data elsewhere.
WORKSPACE_SAFE_KEYS: dict[str, Any] = {
    "model": True,
    "mode": True,
    "default_provider": True,
    "loop": True,
    "compaction": True,
    "tools": True,
    "permissions": {"ask": True, "deny": True},
    "providers": {"*": {"model": True, "context_window": True, "max_output_tokens": True}},
}


def restrict(data: dict[str, Any], allowed: Any, prefix: str = "") -> tuple[dict[str, Any], list[str]]:
    """Keep only allowed keys; return the kept data and the dotted names dropped."""
    if allowed is True:
        return data, []
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in data.items():
        rule = allowed.get(key, allowed.get("*")) if isinstance(allowed, dict) else None
        name = f"{prefix}{key}"
        if rule is None:
            dropped.append(name)
        elif rule is True:
            kept[key] = value
        elif isinstance(value, dict):
            sub, sub_dropped = restrict(value, rule, name + ".")
            kept[key] = sub
            dropped.extend(sub_dropped)
        else:
            dropped.append(name)
    return kept, dropped


class LoadedSettings(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    settings: Settings
    layers: list[Layer]
    notices: list[str]


def load_settings(
    workspace: Path,
    *,
    trusted: bool = False,
    cli: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
    user_file: Path | None = None,
    layers: list[Layer] | None = None,
) -> LoadedSettings:
    """Validate and merge the layers. Never raises for a bad file: it reports and skips it."""
    layers = layers if layers is not None else read_layers(workspace, cli=cli, environ=environ, user_file=user_file)
    notices: list[str] = []
    merged: dict[str, Any] = {}
    for layer in layers:
        if layer.error:
            notices.append(layer.error)
            continue
        data = layer.data
        if layer.name == "workspace" and data and not trusted:
            data, dropped = restrict(data, WORKSPACE_SAFE_KEYS)
            if dropped:
                layer.ignored = dropped
                notices.append(
                    f"{layer.source}: ignored {', '.join(sorted(dropped))} until you trust this "
                    "workspace (--trust-workspace, or answer the prompt in the shell)"
                )
        try:
            Settings.model_validate(deep_merge(merged, data))
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = tuple(first.get("loc", ()))
            key = ".".join(str(k) for k in loc)
            line = line_of_key(layer.source, loc) if layer.name in ("user", "workspace") else None
            where = f"{layer.source}:{line}" if line else layer.source
            layer.error = f"{where}: {key}: {first.get('msg', 'invalid value')}; ignoring this {'file' if layer.name in ('user', 'workspace') else 'layer'}"
            notices.append(layer.error)
            continue
        merged = deep_merge(merged, data)
    return LoadedSettings(settings=Settings.model_validate(merged), layers=layers, notices=notices)
