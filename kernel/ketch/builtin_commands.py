"""Commands the kernel owns itself: ``ketch plugins``, ``ketch config``, ``ketch models``.

Registered through the same hook as plugin commands (as a kernel-internal plugin),
so they work even when every bundled plugin is disabled or broken.
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
    from ketch.plugins import declared

    for hook, registry, kind in _LISTED:
        if registry in vars(kernel):  # already registered for real (the parser needed it)
            continue
        impls = kernel.pm.in_load_order(getattr(kernel.pm.hook, hook).get_hookimpls())
        declarations = {impl.plugin_name: declared(impl) for impl in impls}
        if check:
            if registry == "tools":
                from ketch.tool_cache import BYPASS

                kernel.stash[BYPASS] = True  # every hook called for real (and the cache refreshed)
            getattr(kernel, registry)
            _compare(kernel, kind, declarations)
            continue
        stand_ins = [impl for impl in impls if declarations[impl.plugin_name] is not None]
        if len(stand_ins) < len(impls):
            with kernel.pm.withholding(stand_ins):
                getattr(
                    kernel, registry
                )  # the undeclared ones register (clashes among them reported)
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


# --- ketch config ---------------------------------------------------------------------------


def _config_configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    show = sub.add_parser("show", help="the merged settings, and where each layer came from")
    show.add_argument("--json", action="store_true")
    show.add_argument(
        "--origin", action="store_true", help="say which layer set each value (managed included)"
    )
    sub.add_parser("path", help="where the config files are")


def _config_run(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch.paths import state_dir, user_config_file, workspace_config_file

    if args.config_command == "path":
        print(f"user:      {user_config_file()}")
        print(f"workspace: {workspace_config_file(kernel.workspace)}")
        print(f"state:     {state_dir()}")
        return 0
    loaded = kernel.loaded_settings
    data = loaded.settings.model_dump(mode="json")
    for name in kernel.settings_sections:
        data[name] = loaded.settings.section(name)
    if getattr(args, "origin", False):
        return _show_origins(loaded, data, as_json=args.json)
    if args.json:
        layers = [
            {
                "name": layer.name,
                "source": layer.source,
                "error": layer.error,
                "ignored": layer.ignored,
            }
            for layer in loaded.layers
        ]
        print(json.dumps({"settings": data, "layers": layers, "notices": loaded.notices}, indent=2))
        return 0
    for notice in loaded.notices:
        print(f"ketch: {notice}", file=sys.stderr)
    for layer in loaded.layers:
        state = "error" if layer.error else ("empty" if not layer.data else "ok")
        print(f"# {layer.name:<9} {state:<5} {layer.source}")
    print(json.dumps(data, indent=2))
    return 0


def _show_origins(loaded: Any, data: dict[str, Any], *, as_json: bool) -> int:
    """Every value with the layer that set it (``defaults`` when no layer did)."""
    rows: list[tuple[str, Any, str]] = []

    def walk(value: Any, prefix: str) -> None:
        if isinstance(value, dict) and value:
            for key, inner in value.items():
                walk(inner, f"{prefix}.{key}" if prefix else str(key))
        else:
            origin = loaded.origins.get(prefix)
            if origin is None:  # a table set as a whole, or a default
                parents = [k for k in loaded.origins if prefix.startswith(k + ".")]
                origin = loaded.origins[max(parents, key=len)] if parents else "defaults (built-in)"
            rows.append((prefix, value, origin))

    walk(data, "")
    if as_json:
        print(json.dumps([{"key": k, "value": v, "origin": o} for k, v, o in rows], indent=2))
        return 0
    if loaded.managed_source:
        print(f"# managed policy: {loaded.managed_source} (users and workspaces cannot loosen it)")
    width = max((len(k) for k, _, _ in rows), default=0)
    for key, value, origin in rows:
        print(f"{key:<{width}} = {json.dumps(value)}  # {origin}")
    return 0


# --- ketch models --------------------------------------------------------------------------


def _models_run(kernel: Kernel, args: argparse.Namespace) -> int:
    import asyncio

    from ketch.providers import ProviderError

    config, kind = kernel.provider_config(
        getattr(args, "provider", None), getattr(args, "model", None) or "-"
    )
    provider = kind.create(config, kernel.api_key(config, kind))

    async def fetch() -> Any:
        try:
            return await provider.list_models()
        finally:
            await provider.aclose()

    try:
        models = asyncio.run(fetch())
    except ProviderError as exc:
        print(f"ketch: {exc.message}", file=sys.stderr)
        return 1
    for model in models:
        window = f"  context {model.context_window}" if model.context_window else ""
        print(f"{model.id}{window}")
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
    register(
        Command(
            name="config",
            help="show the merged config or where config files live",
            cli=True,
            configure=_config_configure,
            run=_config_run,
        )
    )
    register(
        Command(
            name="models",
            help="list the models the configured provider offers",
            cli=True,
            run=_models_run,
        )
    )
