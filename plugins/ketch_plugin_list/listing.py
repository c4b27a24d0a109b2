"""``ketch plugins``: fill each plugin's ``provides`` and print the listing."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ketch.api import CHECKING_REGISTRATIONS, declared
from ketch_plugin_list import LISTED_FROM_DECLARATIONS

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel

# The registries ``ketch plugins`` lists: (registration hook, kernel attribute, kind).
_LISTED = (
    ("ketch_register_commands", "commands", "command"),
    ("ketch_register_frontends", "frontends", "frontend"),
    ("ketch_register_providers", "provider_kinds", "provider"),
    ("ketch_register_tools", "tools", "tool"),
    ("ketch_register_modes", "modes", "mode"),
    ("ketch_register_profiles", "profiles", "profile"),
)


def fill_listing(kernel: Kernel, check: bool) -> None:
    """Fill each plugin's ``provides``: implementations that declare their names
    (``ketch.api.provides``) are listed from the declaration, the others are
    called (their hooks import what they register). ``check``: call every one, and
    warn where a declaration and the registration differ."""
    for hook, registry, kind in _LISTED:
        if registry in vars(kernel):  # already registered for real (the parser needed it)
            continue
        impls = kernel.pm.in_load_order(getattr(kernel.pm.hook, hook).get_hookimpls())
        declarations = {impl.plugin_name: declared(impl) for impl in impls}
        if check:
            kernel.stash[CHECKING_REGISTRATIONS] = True  # every hook called for real
            getattr(kernel, registry)
            _compare(kernel, kind, declarations)
            continue
        stand_ins = frozenset(p for p, declared in declarations.items() if declared is not None)
        if len(stand_ins) < len(impls):
            kernel.stash[LISTED_FROM_DECLARATIONS] = stand_ins
            try:  # the undeclared ones register (clashes among them reported)
                getattr(kernel, registry)
            finally:
                del kernel.stash[LISTED_FROM_DECLARATIONS]
            if stand_ins:
                del vars(kernel)[registry]  # incomplete: anything later registers for real
        _merge_declared(kernel, kind, [impl.plugin_name for impl in impls], declarations)


def _merge_declared(
    kernel: Kernel, kind: str, order: list[str], declarations: dict[str, Any]
) -> None:
    """Declared and registered names together, in load order: the first keeps a name."""
    key = kind + "s"
    owners: dict[str, str] = {}
    for plugin in order:
        info = kernel.pm.infos.get(plugin)
        if info is None:
            continue
        provided = declarations[plugin]
        kept = []
        for name in provided.names if provided is not None else info.provides.get(key, []):
            if name in owners:
                kernel.report_clash(kind, name, plugin, owners[name])
                continue
            owners[name] = plugin
            kept.append(name)
        info.provides.pop(key, None)
        if kept:
            info.provides[key] = kept
        if provided is not None and provided.dynamic:
            info.dynamic[key] = provided.dynamic


def _compare(kernel: Kernel, kind: str, declarations: dict[str, Any]) -> None:
    for plugin, provided in declarations.items():
        info = kernel.pm.infos.get(plugin)
        if provided is None or info is None or info.status != "ok":
            continue
        registered = info.provides.get(kind + "s", [])
        missing = [n for n in provided.names if n not in registered]
        extra = [n for n in registered if n not in provided.names]
        if missing or (extra and not provided.dynamic):
            said = ", ".join(provided.names) or "nothing"
            info.warnings.append(
                f"declares {kind}s {said} (@provides) but registered {', '.join(registered) or 'nothing'}"
            )


def as_dict(info: Any) -> dict[str, Any]:
    """``ketch plugins --json``'s entry for a ``PluginInfo``: every field, in order."""
    return {**asdict(info), "import_ms": round(info.import_ms, 3)}


def run(kernel: Kernel, *, json_output: bool, check: bool) -> int:
    fill_listing(kernel, check)
    infos = list(kernel.pm.infos.values())
    for notice in kernel.notices:
        print(f"ketch: {notice}", file=sys.stderr)
    if json_output:
        print(json.dumps([as_dict(i) for i in infos], indent=2))
        return 0
    for info in infos:
        version = f" {info.version}" if info.version else ""
        flag = " (essential)" if info.essential else ""
        print(
            f"{info.name:<14} {info.status:<9} {info.distribution}{version}{flag}  [{info.import_ms:.1f} ms]"
        )
        if info.status == "disabled":
            print(f"    disabled by {info.disabled_by}")
        if info.error:
            print(f"    error: {info.error}")
        for kind in sorted({*info.provides, *info.dynamic}):
            listed = [
                *info.provides.get(kind, []),
                *([f"({info.dynamic[kind]})"] if kind in info.dynamic else []),
            ]
            print(f"    {kind}: {', '.join(listed)}")
        if info.hooks:
            print(f"    hooks: {', '.join(info.hooks)}")
        for warning in info.warnings:
            print(f"    warning: {warning}")
    return 0
