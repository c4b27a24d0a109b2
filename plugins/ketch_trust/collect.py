"""Gathering a workspace's items from every plugin, and applying only what is pinned
of a held-back config value."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch_trust_kit import PinStore, TrustItem, canonical, make_item, say_held

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel

WORKSPACE_CONFIG = ".ketch/config.toml"


def _dotted(key: tuple[str | int, ...]) -> str:
    return "".join(
        f"[{k}]" if isinstance(k, int) else (f".{k}" if i else k) for i, k in enumerate(key)
    )


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def generic_item(kernel: Kernel, key: tuple[str, ...], value: Any) -> TrustItem:
    """A held-back value no plugin splits: one item, shown as it is written (a workspace
    file one of its strings names is pinned with it: a plugin's table may name a
    program)."""
    return make_item(
        "setting",
        _dotted(key),
        WORKSPACE_CONFIG,
        {"key": list(key), "value": value},
        f"{_dotted(key)} = {canonical(value)}",
        workspace=kernel.workspace,
        command=_strings(value),
        setting=key,
    )


def setting_items(kernel: Kernel, key: tuple[str, ...], value: Any) -> list[TrustItem]:
    found = _setting_hook(kernel, key, value)
    if found is None:
        return [generic_item(kernel, key, value)]
    return [item for item in found if isinstance(item, TrustItem)]


def _setting_hook(kernel: Kernel, key: tuple[str, ...], value: Any) -> list[TrustItem] | None:
    if not hasattr(kernel.pm.hook, "trust_setting_items"):
        return None
    answer = kernel.hooks.first("trust_setting_items", kernel=kernel, key=key, value=value)
    return list(answer) if isinstance(answer, list | tuple) else None


def narrowed(value: Any, parts: list[tuple[str | int, ...]]) -> Any:
    """The parts of ``value`` at the given sub-paths (``()`` is all of it); None when
    nothing is left (an empty list must not replace a user's own)."""
    if not parts:
        return None
    if () in parts:
        return value
    if isinstance(value, dict):
        out = {}
        for name, sub in value.items():
            got = narrowed(sub, [p[1:] for p in parts if p and p[0] == name])
            if got is not None:
                out[name] = got
        return out or None
    if isinstance(value, list):
        kept = [
            got
            for index, sub in enumerate(value)
            if (got := narrowed(sub, [p[1:] for p in parts if p and p[0] == index])) is not None
        ]
        return kept or None
    return None


def admit(kernel: Kernel, key: tuple[str, ...], value: Any, store: PinStore | None = None) -> Any:
    """What of a held-back value applies: its pinned items' parts."""
    items = setting_items(kernel, key, value)
    try:
        pins = (store or PinStore()).pins(kernel.workspace)
    except Exception as exc:  # noqa: BLE001 - a broken pin file trusts nothing, and says so
        kernel.notices.append(str(exc))
        return None
    parts = [
        item.setting[len(key) :]
        for item in items
        if item.digest in pins and item.setting is not None and item.setting[: len(key)] == key
    ]
    for item in items:
        if item.digest not in pins:
            changed = any(p.get("key") == item.key for p in pins.values())
            say_held(kernel, item, changed=changed, held="not applied")
    return narrowed(value, parts)


def all_items(kernel: Kernel) -> list[TrustItem]:
    """Every item of the workspace: its held-back config values (split by their
    owners), then what each plugin lists, in plugin order, without duplicates."""
    items: list[TrustItem] = []
    layer = next((lay for lay in kernel.loaded_settings.layers if lay.name == "workspace"), None)
    for key, value in layer.held if layer is not None else []:
        items.extend(setting_items(kernel, key, value))
    if hasattr(kernel.pm.hook, "trust_items"):
        for _, found in kernel.hooks.call("trust_items", kernel=kernel):
            if isinstance(found, list | tuple):
                items.extend(i for i in found if isinstance(i, TrustItem))
    seen: set[str] = set()
    unique = []
    for item in items:
        if item.digest not in seen:
            seen.add(item.digest)
            unique.append(item)
    return unique
