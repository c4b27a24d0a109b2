"""ketch_anthropic: the Anthropic Messages API (``kind = "anthropic"``).

Streams SSE (text, tool_use, thinking and redacted_thinking blocks), sends the system
prompt in its own field and tool results as the first blocks of one user message, and
replays thinking blocks byte-exact with their signatures. Reads ``ANTHROPIC_API_KEY``
and ``ANTHROPIC_BASE_URL``. The implementation is imported only when a provider is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl, provides

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ProviderConfig, ProviderKind, Secret


def _create(config: ProviderConfig, key: Secret | None) -> Any:
    from ketch_anthropic.provider import AnthropicProvider

    return AnthropicProvider(config, key)


@hookimpl
@provides("anthropic")
def ketch_register_providers(register: Callable[[ProviderKind], None]) -> None:
    from ketch.api import ProviderKind
    from ketch_provider_kit.base import HttpProviderConfig

    register(
        ProviderKind(
            kind="anthropic",
            config_model=HttpProviderConfig,
            setup_hint="export ANTHROPIC_API_KEY=...; ketch --provider anthropic --model claude-sonnet-4-5",
            create=_create,
            description="Anthropic Messages API (Claude)",
            env_key="ANTHROPIC_API_KEY",
            env_base_url="ANTHROPIC_BASE_URL",
            default_base_url="https://api.anthropic.com",
            needs_key=True,
        )
    )
