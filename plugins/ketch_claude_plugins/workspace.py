"""A workspace's say in which plugins run there: ``[claude_plugins]`` in its
``.ketch/config.toml`` (or in the user's ``config.toml``)::

    [claude_plugins]
    enabled = ["commit-commands@team-tools"]   # runs here, once you trust this entry
    disabled = ["noisy@team-tools"]            # off here (applies at once: it only takes away)

``ketch plugin install --scope project`` writes ``enabled`` (Claude Code's project
scope: the entry is shared through the repository). Each entry of a workspace's
``enabled`` is a trust item (``ketch trust`` shows it): a cloned repository cannot turn
on a plugin you installed but keep off; ``disabled`` needs no trust. The plugin itself
must be installed (its files and pins live in your data dir, never in the repository).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ketch.errors import KetchError
from ketch.settings import SettingsSection

if TYPE_CHECKING:  # pragma: no cover
    from ketch.kernel import Kernel
    from ketch_trust_kit import TrustItem

SOURCE = ".ketch/config.toml"


class ClaudePluginsSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: list[str] = Field(default_factory=list)
    disabled: list[str] = Field(default_factory=list)


SECTION = SettingsSection(
    "claude_plugins",
    ClaudePluginsSettings,
    workspace_safe=frozenset({"disabled"}),
    doc="Claude Code plugins turned on (enabled) or off (disabled) here, as NAME@MARKETPLACE",
)


def enable_item(kernel: Kernel, plugin_id: str, index: int) -> TrustItem:
    from ketch_trust_kit import make_item

    return make_item(
        "Claude Code plugin",
        plugin_id,
        SOURCE,
        {"enabled": plugin_id},
        f"turns on the installed Claude Code plugin {plugin_id} here "
        "(its commands, agents, skills, and the hooks and MCP servers you pinned at install)",
        workspace=kernel.workspace,
        setting=("claude_plugins", "enabled", index),
    )


def setting_items(kernel: Kernel, value: Any) -> list[TrustItem]:
    entries = value if isinstance(value, list) else []
    return [enable_item(kernel, str(e), i) for i, e in enumerate(entries)]


def config_path(workspace: Path) -> Path:
    from ketch.paths import workspace_config_file

    return workspace_config_file(workspace)


def written(workspace: Path) -> dict[str, list[str]]:
    """The workspace's ``[claude_plugins]`` as written (nothing held back)."""
    path = config_path(workspace)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise KetchError(f"{path}: {exc}; fix it first") from None
    table = data.get("claude_plugins")
    if not isinstance(table, dict):
        return {}
    return {k: [str(x) for x in v] for k, v in table.items() if isinstance(v, list)}


def edit(workspace: Path, plugin_id: str, *, enable: bool | None) -> bool:
    """Put ``plugin_id`` in ``enabled`` (True), in ``disabled`` (False), or in neither
    (None) of the workspace's config, keeping its comments; an emptied table goes.
    Whether the file changed."""
    import tomlkit

    from ketch_claude_kit.config_files import write_atomically

    path = config_path(workspace)
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        doc = tomlkit.parse(text)
    except (OSError, UnicodeDecodeError, Exception) as exc:  # tomlkit raises its own errors
        raise KetchError(f"{path}: {exc}; fix it first, nothing was changed") from None
    table = doc.get("claude_plugins")
    if table is None and enable is None:
        return False
    if table is None:
        table = tomlkit.table()
        doc["claude_plugins"] = table
    changed = False
    for key, wanted in (("enabled", enable is True), ("disabled", enable is False)):
        values = table.get(key)
        present = values is not None and plugin_id in [str(v) for v in values]
        if wanted and not present:
            if values is None:
                values = tomlkit.array()
                table[key] = values
            values.append(plugin_id)
            changed = True
        elif not wanted and values is not None and present:
            keep = [str(v) for v in values if str(v) != plugin_id]
            if keep:
                table[key] = keep
            else:
                del table[key]
            changed = True
    if not table:
        del doc["claude_plugins"]
    if not changed:
        return False
    new = tomlkit.dumps(doc)
    tomllib.loads(new)  # never write what would not parse
    write_atomically(path, new)
    return True
