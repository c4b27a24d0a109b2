"""The plugin's own settings (``[mcp]``) and the environment a stdio server starts with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class McpOptions:
    timeout: float = 60.0  # seconds one tool call may take
    startup_timeout: float = 15.0  # seconds for all servers to start and list their tools
    max_output: int = 30_000  # characters of one result the model sees

    @classmethod
    def from_section(cls, section: dict[str, Any]) -> tuple[McpOptions, list[str]]:
        """Options from ``[mcp]``; a bad value keeps the default and says so."""
        values: dict[str, Any] = {}
        problems: list[str] = []
        for name, kind in (("timeout", float), ("startup_timeout", float), ("max_output", int)):
            if name not in section:
                continue
            raw = section[name]
            try:
                value = kind(raw)
                if isinstance(raw, bool) or value <= 0:
                    raise ValueError
            except (TypeError, ValueError):
                problems.append(
                    f"[mcp] {name} = {raw!r} is not a positive number; using {getattr(cls, name)}"
                )
                continue
            values[name] = value
        return cls(**values), problems


def child_environment(parent: dict[str, str], configured: dict[str, str]) -> dict[str, str]:
    """The user's environment minus secret-looking variables, plus what the server's
    ``env`` table sets explicitly (those pass whatever their names)."""
    from ketch_process_kit.childenv import child_environment

    return child_environment(parent, extra=configured)
