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

Import-light (no pydantic): which plugins run is worked out while commands register,
before the command line is parsed, from the config files as written and the pins
(the typed section, :mod:`ketch_claude_plugins.settings`, validates the same table).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.api import KetchError

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel
    from ketch_trust_kit import TrustItem

SOURCE = ".ketch/config.toml"


@dataclass
class Choice:
    """What the config files say, as it applies: ``enabled`` (the user's own, and the
    workspace's trusted entries) and ``disabled`` (anyone's)."""

    enabled: list[str] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)


def _ids(table: Any, key: str) -> list[str]:
    values = table.get(key) if isinstance(table, dict) else None
    return [str(v) for v in values] if isinstance(values, list) else []


def choice(kernel: Kernel) -> Choice:
    """The layers' ``[claude_plugins]``: a workspace's ``enabled`` entry only while the
    person has it trusted (said once when not)."""
    from ketch_trust_kit import check

    found = Choice()
    for layer in kernel.layers:
        if layer.error:
            continue
        table = layer.data.get("claude_plugins") if isinstance(layer.data, dict) else None
        found.disabled += _ids(table, "disabled")
        if layer.name == "workspace":
            for index, plugin_id in enumerate(_ids(table, "enabled")):
                item = enable_item(kernel, plugin_id, index)
                if check(kernel, item, held="not applied"):
                    found.enabled.append(plugin_id)
        elif layer.name != "managed":
            found.enabled += _ids(table, "enabled")
    return found


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
    from ketch.api import workspace_config_file

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
