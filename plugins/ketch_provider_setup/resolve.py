"""Resolving the provider a session uses: its ``[providers.NAME]`` table layered over
the kind's defaults, the model chosen, the kind's own keys validated."""

from __future__ import annotations

from typing import Any

from ketch.api import Kernel, KetchError, ProviderConfig, ProviderKind, line_of_key


def resolve_provider(
    kernel: Kernel, name: str | None, model: str | None
) -> tuple[ProviderConfig, ProviderKind]:
    """``name``/``model`` as asked (None: the configured choice, else a default one)."""
    settings = kernel.settings
    kinds = kernel.provider_kinds
    name = name or settings.provider or settings.default_provider
    if not name and settings.providers:
        name = next(iter(settings.providers))
    if not name:
        from ketch_provider_setup.choose import default_provider

        name = default_provider(kernel)
    table = dict(settings.providers.get(name, {}))
    kind_name = str(table.get("kind") or name)
    kind = kinds.get(kind_name)
    if kind is None:
        known = ", ".join(sorted(kinds)) or "none (all provider plugins are disabled)"
        where = f"[providers.{name}] kind" if name in settings.providers else "--provider"
        raise KetchError(
            f"unknown provider kind '{kind_name}' ({where}); known kinds: {known}", exit_code=2
        )
    table.setdefault("kind", kind_name)
    table["name"] = name
    if not table.get("base_url"):
        table["base_url"] = (
            kind.env_base_url and kernel.environ.get(kind.env_base_url)
        ) or kind.default_base_url
    chosen_model = model or settings.model or table.get("model") or kind.default_model
    if not chosen_model:
        raise KetchError(
            f"no model chosen for provider '{name}': pass --model NAME or set model in [providers.{name}] (ketch models lists them)",
            exit_code=2,
        )
    table["model"] = chosen_model
    # Before validating, as the kernel did: a refused provider is said first.
    kernel.check_managed_provider(name, kind_name, chosen_model)
    from pydantic import ValidationError

    model_class = kind.config_model or ProviderConfig
    try:
        return model_class.model_validate(table), kind
    except ValidationError as exc:
        raise KetchError(config_problem(kernel, f"providers.{name}", exc), exit_code=2) from None


def config_problem(kernel: Kernel, table: str, exc: Any) -> str:
    """One line for a bad value in a config table: where, which key, what is wrong."""
    first = exc.errors()[0]
    loc = tuple(str(k) for k in first.get("loc", ()))
    key = ".".join((table, *loc))
    where = ""
    for layer in reversed(kernel.layers):
        if layer.name in ("user", "workspace") and loc:
            line = line_of_key(layer.source, (*table.split("."), *loc))
            if line:
                where = f"{layer.source}:{line}: "
                break
    return f"{where}{key}: {first.get('msg', 'invalid value')} (got {first.get('input')!r}); fix the value in the config file"
