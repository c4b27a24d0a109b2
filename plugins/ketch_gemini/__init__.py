"""ketch_gemini: the Gemini API, native (``kind = "gemini"``).

Streams ``models/{model}:streamGenerateContent?alt=sse`` (text, thought summaries as
reasoning, whole function calls, ``thoughtSignature`` replayed on exactly the parts that
carried it), lists models with their ``inputTokenLimit``, and reads Google's error
details (an invalid key is a 400; a 429 says how long to wait in ``RetryInfo``). Reads
``GEMINI_API_KEY`` (then ``GOOGLE_API_KEY``) and ``GEMINI_BASE_URL``; the key goes in the
``x-goog-api-key`` header. The implementation is imported only when a provider is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl, provides

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ProviderConfig, ProviderKind, Secret


def _create(config: ProviderConfig, key: Secret | None) -> Any:
    from ketch_gemini.provider import GeminiProvider

    return GeminiProvider(config, key)


@hookimpl
@provides("gemini")
def ketch_register_providers(register: Callable[[ProviderKind], None]) -> None:
    from ketch.api import ProviderKind

    register(
        ProviderKind(
            kind="gemini",
            setup_hint="export GEMINI_API_KEY=...; ketch --provider gemini --model gemini-2.5-flash   (or: ketch auth set gemini)",
            create=_create,
            description="Google Gemini API (native generateContent streaming)",
            env_key="GEMINI_API_KEY",
            env_base_url="GEMINI_BASE_URL",
            default_base_url="https://generativelanguage.googleapis.com",
            needs_key=True,
        )
    )
