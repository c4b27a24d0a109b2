"""ketch_ollama: Ollama's native API (``kind = "ollama"``).

Streams ``/api/chat`` NDJSON (``message.thinking``, complete tool calls with object
arguments), reads the model's context length and capabilities from ``/api/show``, and
always sends ``options.num_ctx`` (Ollama's small default silently drops old messages).
Honours ``OLLAMA_HOST``; needs no key (``OLLAMA_API_KEY``, when set, is sent as a
bearer token, for ollama.com or an authenticating proxy). ``detect`` finds a local server via
``/api/version`` for the first run. The implementation is imported only when used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl, provides

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ProviderConfig, ProviderKind, Secret


def _create(config: ProviderConfig, key: Secret | None) -> Any:
    from ketch_ollama.provider import OllamaProvider

    return OllamaProvider(config, key)


async def _detect() -> Any:
    from ketch_ollama.provider import detect_ollama

    return await detect_ollama()


@hookimpl(optionalhook=True)
def catalog_local_kinds() -> list[str]:
    """Ollama runs its models on this machine: the catalog prices them at 0."""
    return ["ollama"]


@hookimpl
@provides("ollama")
def ketch_register_providers(register: Callable[[ProviderKind], None]) -> None:
    from ketch.api import ProviderKind
    from ketch_provider_kit.base import HttpProviderConfig

    register(
        ProviderKind(
            kind="ollama",
            config_model=HttpProviderConfig,
            setup_hint="ollama serve; ketch --provider ollama --model qwen2.5-coder   (OLLAMA_HOST for another address)",
            local_hint="local Ollama (localhost:11434)",
            create=_create,
            description="Ollama native API (local models)",
            env_key="OLLAMA_API_KEY",
            env_base_url="OLLAMA_HOST",
            default_base_url="http://127.0.0.1:11434",
            needs_key=False,
            detect=_detect,
        )
    )
