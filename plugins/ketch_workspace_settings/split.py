"""What a workspace's own ``.ketch/config.toml`` may set (``ketch_workspace_config``).

Only keys that cannot raise authority apply as written (:data:`WORKSPACE_SAFE_KEYS`
plus what each settings section declares safe); every other value is held back and
offered, value by value, to ``ketch_workspace_setting``, which answers with what of it
the person trusted (the trust plugin: the pinned parts); with no answer it does not apply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, SettingsSection

KeyPath = tuple[str, ...]

# Kernel keys a workspace config may set before the workspace is trusted: none of
# them can raise authority, change which code runs, or send data elsewhere. Plugin
# sections add theirs (``SettingsSection.workspace_safe``).
WORKSPACE_SAFE_KEYS: dict[str, Any] = {
    "model": True,
    "mode": True,
    "default_provider": True,
    "loop": True,
    "tools": True,
    "providers": {"*": {"model": True, "context_window": True, "max_output_tokens": True}},
}


def safe_rule(section: SettingsSection) -> Any:
    """A section's ``workspace_safe`` in :func:`hold_back`'s format (None: nothing)."""
    if section.workspace_safe is True:
        return True
    if isinstance(section.workspace_safe, dict):
        return section.workspace_safe
    if section.workspace_safe:
        return {key: True for key in section.workspace_safe}
    return None


def safe_keys(sections: list[SettingsSection]) -> dict[str, Any]:
    """The kernel's safe keys plus every section's."""
    allowed = dict(WORKSPACE_SAFE_KEYS)
    for section in sections:
        rule = safe_rule(section)
        if rule is None:
            continue
        current = allowed.get(section.name)
        if current is True or rule is True:
            allowed[section.name] = True
        else:
            allowed[section.name] = {**(current or {}), **rule}
    return allowed


def hold_back(
    data: dict[str, Any], allowed: Any, path: KeyPath = ()
) -> tuple[dict[str, Any], list[tuple[KeyPath, Any]]]:
    """Split ``data`` into what applies as written and what is held back, as
    ``(path of table names, value)`` pairs at the depth the rules say."""
    if allowed is True:
        return data, []
    kept: dict[str, Any] = {}
    held: list[tuple[KeyPath, Any]] = []
    for key, value in data.items():
        rule = allowed.get(key, allowed.get("*")) if isinstance(allowed, dict) else None
        where = (*path, str(key))
        if rule is True:
            kept[key] = value
        elif rule is not None and isinstance(value, dict):
            sub, sub_held = hold_back(value, rule, where)
            kept[key] = sub
            held.extend(sub_held)
        else:
            held.append((where, value))
    return kept, held


def _put(data: dict[str, Any], path: KeyPath, value: Any) -> None:
    target = data
    for key in path[:-1]:
        nested = target.get(key)
        if not isinstance(nested, dict):
            nested = {}
            target[key] = nested
        target = nested
    target[path[-1]] = value


def split_workspace(
    kernel: Kernel, data: dict[str, Any], sections: list[SettingsSection], admit: bool
) -> tuple[dict[str, Any], list[tuple[KeyPath, Any]], list[str]]:
    """The workspace data to apply, what was held back, and the dotted names of the
    held-back values not (wholly) admitted (``admit``: ask ``ketch_workspace_setting``)."""
    kept, held = hold_back(data, safe_keys(sections))
    ignored: list[str] = []
    for path, value in held:
        applied = (
            kernel.hooks.first("ketch_workspace_setting", kernel=kernel, key=path, value=value)
            if admit
            else None
        )
        if applied is not None:
            _put(kept, path, applied)
        if applied is None or applied != value:
            ignored.append(".".join(path))
    return kept, held, ignored
