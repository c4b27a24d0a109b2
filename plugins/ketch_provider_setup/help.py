"""What to tell a person for whom no provider could be chosen."""

from __future__ import annotations

from typing import Any


def config_problems(problems: list[str]) -> str:
    """Why no provider is configured when the config files say otherwise: what in them
    could not be used, with file and line."""
    lines = ["the configuration could not be used, so no model provider is configured:"]
    lines += [f"  {problem}" for problem in problems]
    lines.append("  fix it (`ketch config show` lists every layer), or pass --provider and --model")
    return "\n".join(lines)


def first_run_help(kinds: dict[str, Any]) -> str:
    """What to do when nothing is configured, in the loaded provider kinds' own words."""
    local = [k.local_hint for k in kinds.values() if k.local_hint]
    head = "no model provider is configured"
    if local:
        head += ", and no " + " or ".join(local) + " answered"
    lines = [head + ".", "  Set one up in any of these ways:"]
    lines += [f"    {k.setup_hint}" for k in kinds.values() if k.setup_hint]
    lines.append("    or add [providers.NAME] with kind, base_url and model to " + _config_hint())
    if not kinds:
        lines.append("  (no provider plugin is loaded: check `ketch plugins`)")
    return "\n".join(lines)


def _config_hint() -> str:
    from ketch.api import user_config_file

    return str(user_config_file())
