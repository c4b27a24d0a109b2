"""The ``[lsp]`` table: deadlines, caps, and ``[lsp.servers.NAME]``.

A repository's ``.ketch/config.toml`` may set the deadlines and caps (they cannot
raise authority: each is bounded), never a server nor ``unsandboxed``: a server is a
program that runs, so a workspace's own start one by one as the person trusts each
(``ketch trust``), exactly like MCP servers.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ketch.api import Section, SettingsSection


class ServerSettings(BaseModel):
    """One ``[lsp.servers.NAME]`` table. For a built-in name, only the keys written
    replace the built-in's (``enabled = false`` switches a built-in off)."""

    model_config = ConfigDict(extra="forbid")

    command: list[str] | None = None  # the program and its arguments ("ruff", "server")
    patterns: list[str] | None = None  # file name globs: ["*.py", "*.pyi"]
    language_id: str | None = None  # the LSP language id (default: from the file suffix)
    root_markers: list[str] | None = None  # files that mark a project root
    initialization_options: dict[str, Any] | None = None
    settings: dict[str, Any] | None = None  # answers to workspace/configuration
    env: dict[str, str] | None = None  # added to the server's environment
    enabled: bool = True

    @field_validator("command", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            import shlex

            return shlex.split(value)
        return value

    @field_validator("command")
    @classmethod
    def _not_empty(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (not value or not value[0].strip()):
            raise ValueError("command must name a program")
        return value


class LspSettings(Section):
    """Language servers: diagnostics after edits, and the code-intelligence tools."""

    enabled: bool = True
    # Attach the new errors and warnings of changed files to write/edit/shell results.
    diagnostics: bool = True
    # Seconds: a server's start and initialize; any one request; what one call waits
    # for the diagnostics of the files it changed (the turn goes on after it).
    start_timeout: float = Field(20.0, gt=0, le=120)
    request_timeout: float = Field(10.0, gt=0, le=120)
    diagnostics_timeout: float = Field(8.0, gt=0, le=60)
    # Problems attached to one result (the rest are counted); results one tool lists.
    max_diagnostics: int = Field(20, ge=1, le=500)
    max_results: int = Field(100, ge=1, le=2000)
    # A server that crashes or hangs is started again at most this many times.
    max_restarts: int = Field(2, ge=0, le=10)
    # Run servers where no sandbox is in force (they may run a project's code: its
    # interpreter, build scripts). Only your own config can set this.
    unsandboxed: bool = False
    servers: dict[str, ServerSettings] = Field(default_factory=dict)


LSP = SettingsSection(
    "lsp",
    LspSettings,
    workspace_safe=frozenset(
        {
            "enabled",
            "diagnostics",
            "start_timeout",
            "request_timeout",
            "diagnostics_timeout",
            "max_diagnostics",
            "max_results",
            "max_restarts",
        }
    ),
    doc="language servers: diagnostics after edits; definition, references, rename",
)
