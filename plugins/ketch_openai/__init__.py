"""ketch_openai: OpenAI-compatible providers.

* ``openai``: Chat Completions over SSE; works against OpenAI, vLLM, llama.cpp server,
  LM Studio, OpenRouter, DeepSeek, Ollama's ``/v1`` and the like, with or without
  ``/v1`` in ``base_url``. Its ``detect`` finds a local LM Studio (localhost:1234).
* ``openai-responses``: the Responses API (``store: false``, the history rebuilt on
  every request, encrypted reasoning replayed), which OpenAI's reasoning models prefer.

Both read ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``. Implementation modules are
imported only when a provider is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl, provides

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ProviderConfig, ProviderKind, Secret

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def _create_chat(config: ProviderConfig, key: Secret | None) -> Any:
    from ketch_openai.chat import ChatProvider

    return ChatProvider(config, key)


def _create_responses(config: ProviderConfig, key: Secret | None) -> Any:
    from ketch_openai.responses import ResponsesProvider

    return ResponsesProvider(config, key)


async def _detect_lmstudio() -> Any:
    from ketch_openai.detect import detect_lmstudio

    return await detect_lmstudio()


@hookimpl(optionalhook=True)
def frontend_setup_choices() -> dict[str, dict[str, str]]:
    """In a first-run setup the openai kind is OpenAI's own API, and one more choice
    takes any OpenAI-compatible server at a URL the person gives (the shell's)."""
    return {
        "openai": {
            "label": f"openai: OpenAI ({DEFAULT_BASE_URL})",
            "any_url": "Any OpenAI-compatible server (you give its URL)",
            "any_url_name": "openai-compatible",
        }
    }


@hookimpl
@provides("openai", "openai-responses")
def ketch_register_providers(register: Callable[[ProviderKind], None]) -> None:
    from ketch.api import ProviderKind
    from ketch_provider_kit.base import HttpProviderConfig

    register(
        ProviderKind(
            kind="openai",
            config_model=HttpProviderConfig,
            setup_hint="export OPENAI_API_KEY=... [OPENAI_BASE_URL=...]; ketch --provider openai --model gpt-4o   (or: ketch auth set openai, to keep the key in the OS keyring)",
            local_hint="LM Studio (localhost:1234)",
            create=_create_chat,
            description="OpenAI-compatible chat completions (OpenAI, vLLM, llama.cpp, LM Studio, OpenRouter, ...)",
            env_key="OPENAI_API_KEY",
            env_base_url="OPENAI_BASE_URL",
            default_base_url=DEFAULT_BASE_URL,
            needs_key=True,
            detect=_detect_lmstudio,
        )
    )
    register(
        ProviderKind(
            kind="openai-responses",
            config_model=HttpProviderConfig,
            create=_create_responses,
            description="OpenAI Responses API (reasoning models; store: false)",
            env_key="OPENAI_API_KEY",
            env_base_url="OPENAI_BASE_URL",
            default_base_url=DEFAULT_BASE_URL,
            needs_key=True,
        )
    )
