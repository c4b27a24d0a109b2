"""The command the kernel owns itself: ``ketch plugins``.

Registered through the same hook as plugin commands (as a kernel-internal plugin), so
it works even when every bundled plugin is disabled or broken: it is how a person finds
out why. (``ketch config`` and ``ketch models`` belong to the ``ketch_admin`` plugin.)
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ketch.commands import Command
from ketch.markers import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

    from ketch.kernel import Kernel


# --- ketch plugins ---------------------------------------------------------------------


def _plugins_configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    parser.add_argument(
        "--check",
        action="store_true",
        help="call every registration hook as a session does (imports every tool and provider) and report declarations that do not match",
    )


# The registries ``ketch plugins`` lists: (registration hook, kernel attribute, kind).
_LISTED = (
    ("ketch_register_commands", "commands", "command"),
    ("ketch_register_frontends", "frontends", "frontend"),
    ("ketch_register_providers", "provider_kinds", "provider"),
    ("ketch_register_tools", "tools", "tool"),
    ("ketch_register_modes", "modes", "mode"),
    ("ketch_register_profiles", "profiles", "profile"),
)


def _fill_listing(kernel: Kernel, check: bool) -> None:
    """Fill each plugin's ``provides``: implementations that declare their names
    (``ketch.plugins.provides``) are listed from the declaration, the others are
    called (their hooks import what they register). ``check``: call every one, and
    warn where a declaration and the registration differ."""
    from ketch.plugins import CHECKING_REGISTRATIONS, declared

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
            kernel._withheld = stand_ins
            try:  # the undeclared ones register (clashes among them reported)
                getattr(kernel, registry)
            finally:
                kernel._withheld = frozenset()
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
                kernel._report_clash(kind, name, plugin, owners[name])
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


def _plugins_run(kernel: Kernel, args: argparse.Namespace) -> int:
    _fill_listing(kernel, bool(getattr(args, "check", False)))
    infos = [i for i in kernel.pm.infos.values() if i.name != "builtin"]
    for notice in kernel.notices:
        print(f"ketch: {notice}", file=sys.stderr)
    if args.json:
        print(json.dumps([i.as_dict() for i in infos], indent=2))
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


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    register(
        Command(
            name="plugins",
            help="list plugins: status, distribution, what each provides, hooks, import time",
            cli=True,
            configure=_plugins_configure,
            run=_plugins_run,
        )
    )
