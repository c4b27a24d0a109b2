"""What is known about models without asking the provider: context windows."""

from __future__ import annotations

# --- known models ------------------------------------------------------------------------------------

# Context windows of well-known models, matched by the longest prefix of the model id
# (after any ``vendor/`` prefix, as OpenRouter spells them). Config wins over this table.
KNOWN_CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "chatgpt-4o": 128_000,
    "o1-mini": 128_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "codex-mini": 200_000,
    "gpt-oss": 131_072,
    "claude-": 200_000,
    "deepseek-chat": 128_000,
    "deepseek-reasoner": 128_000,
    "deepseek-coder": 128_000,
    "deepseek-r1": 128_000,
    "deepseek-v3": 128_000,
    "qwen3-coder": 262_144,
    "qwen2.5-coder": 32_768,
    "kimi-k2": 131_072,
    "glm-4.5": 131_072,
    "glm-4.6": 200_000,
    "grok-4": 256_000,
    "grok-3": 131_072,
    "gemini-2.5": 1_048_576,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama-3.1": 131_072,
    "llama-3.3": 131_072,
    "mistral-large": 131_072,
    "codestral": 256_000,
    "devstral": 131_072,
}


def known_context_window(model: str | None) -> int | None:
    """The context window of a well-known model id, or None."""
    if not model:
        return None
    name = model.rsplit("/", 1)[-1].lower()
    best = max(
        (prefix for prefix in KNOWN_CONTEXT_WINDOWS if name.startswith(prefix)),
        key=len,
        default=None,
    )
    return KNOWN_CONTEXT_WINDOWS[best] if best else None
