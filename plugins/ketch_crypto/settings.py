"""The ``[storage]`` keys the encryption plugin reads, checked into one small value.

[storage]
key = "auto"               # "auto" | "keyring" | "passphrase" | "file"
key_cache_timeout = "8h"   # how long an unwrapped passphrase key stays in the kernel keyring; "0" = never cached
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from ketch.api import ConfigError

Provider = Literal["auto", "keyring", "passphrase", "file"]
PROVIDERS: tuple[str, ...] = ("auto", "keyring", "passphrase", "file")
DEFAULT_CACHE_SECONDS = 8 * 3600
_DURATION = re.compile(r"^\s*(?:(\d+)\s*h)?\s*(?:(\d+)\s*m)?\s*(?:(\d+)\s*s?)?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class KeySettings:
    provider: Provider = "auto"
    cache_seconds: int = DEFAULT_CACHE_SECONDS


def parse_duration(value: Any, name: str) -> int:
    """Seconds from ``3600``, ``"8h"``, ``"1h30m"``, ``"90s"``; ``"off"``/``false``/``0`` is 0."""
    if value is False or (
        isinstance(value, str) and value.strip().lower() in ("off", "never", "no")
    ):
        return 0
    if isinstance(value, bool):
        raise ConfigError(
            f'[storage] {name} = {value!r} is not a duration: use seconds or "8h", "30m", "off"'
        )
    if isinstance(value, (int, float)) and value >= 0:
        return int(value)
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match and any(match.groups()):
            hours, minutes, seconds = (int(g or 0) for g in match.groups())
            return hours * 3600 + minutes * 60 + seconds
    raise ConfigError(
        f'[storage] {name} = {value!r} is not a duration: use seconds or "8h", "30m", "off"'
    )


def key_settings(settings: Any) -> KeySettings:
    section: dict[str, Any] = settings.section("storage") if hasattr(settings, "section") else {}
    provider = section.get("key", "auto")
    if provider not in PROVIDERS:
        raise ConfigError(
            f"[storage] key = {provider!r} is not one of {', '.join(PROVIDERS)} (in config.toml)"
        )
    cache = parse_duration(
        section.get("key_cache_timeout", DEFAULT_CACHE_SECONDS), "key_cache_timeout"
    )
    return KeySettings(provider=provider, cache_seconds=cache)
