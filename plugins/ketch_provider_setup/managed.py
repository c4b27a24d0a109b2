"""The managed policy's provider allow-lists: ``allowed_providers`` (names or kinds) and
``allowed_models`` (globs), held whatever chose the provider (config, the environment,
detection, a resumed session, another plugin's ``ketch_resolve_provider``)."""

from __future__ import annotations

from ketch.api import Kernel, KetchError


def managed_refusal(kernel: Kernel, name: str, kind: str, model: str) -> KetchError | None:
    """The managed policy's refusal of this provider and model, or None when it allows them."""
    from ketch_policy_kit.globs import match_any_name

    loaded = kernel.loaded_settings
    managed, source = loaded.managed, loaded.managed_source
    providers = managed.get("allowed_providers")
    if isinstance(providers, list) and name not in providers and kind not in providers:
        return KetchError(
            f"provider '{name}' is not allowed by the managed policy {source} "
            f"(allowed: {', '.join(map(str, providers)) or 'none'})",
            exit_code=2,
        )
    models = managed.get("allowed_models")
    if isinstance(models, list) and not match_any_name(model, map(str, models)):
        return KetchError(
            f"model '{model}' is not allowed by the managed policy {source} "
            f"(allowed: {', '.join(map(str, models)) or 'none'})",
            exit_code=2,
        )
    return None
