"""``ketch config`` (the merged settings, their layers and origins, where the files
are) and ``ketch models`` (the models the configured provider offers)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel


def configure_config(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    show = sub.add_parser("show", help="the merged settings, and where each layer came from")
    show.add_argument("--json", action="store_true")
    show.add_argument(
        "--origin", action="store_true", help="say which layer set each value (managed included)"
    )
    sub.add_parser("path", help="where the config files are")


def run_config(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch.api import state_dir, user_config_file, workspace_config_file

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


def run_models(kernel: Kernel, args: argparse.Namespace) -> int:
    import asyncio

    from ketch.api import ProviderError

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
