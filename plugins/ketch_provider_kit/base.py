"""What every HTTP provider client holds: its config, its key, and one httpx client."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ketch.api import ErrorKind, ProviderConfig, ProviderError, Secret
from ketch_provider_kit.models import known_context_window
from ketch_provider_kit.streams import LoopClient
from ketch_provider_kit.text import config_extra


class HttpProviderConfig(ProviderConfig):
    """The ``[providers.NAME]`` keys every HTTP provider understands (validated: a wrong
    type is a one-line error before any request). Kinds subclass it for their own."""

    headers: dict[str, str] = Field(default_factory=dict)  # sent with every request
    extra_body: dict[str, Any] = Field(default_factory=dict)  # merged into every request body
    api_key_required: bool | None = None  # None: the kind decides (local servers need none)


class HttpProvider:
    """Base for provider clients that talk HTTP.

    Subclasses set ``kind`` and ``key_env`` (the kind's usual key variable, for hints)
    and override ``key_required`` when a key is optional (local servers).
    """

    kind = ""
    key_env = ""

    def __init__(self, config: ProviderConfig, key: Secret | None) -> None:
        self.config = config.model_copy()
        self.name = config.name
        self.model = config.model or ""
        # Strip stray whitespace: a key pasted with its newline is an illegal header.
        self._key = key.reveal().strip() if key else None
        self._http = LoopClient(
            timeout=config.read_timeout,
            connect_timeout=config.connect_timeout,
            base_url=config.base_url,
        )
        if self.config.context_window is None:
            self.config.context_window = known_context_window(self.model)

    @property
    def secrets(self) -> tuple[str | None, ...]:
        """Values to scrub from any text that leaves the client (errors, logs)."""
        return (self._key,)

    def auth_hint(self) -> str:
        return (
            f"set {self.config.api_key_env or self.key_env} (in your shell profile, to keep it) "
            f"or run `ketch auth set {self.name}` (where an OS keyring is available)"
        )

    def key_required(self) -> bool:
        return bool(config_extra(self.config, "api_key_required", True))

    def check_key(self) -> None:
        if not self._key and self.key_required():
            raise ProviderError(ErrorKind.AUTH, f"{self.name}: no API key: {self.auth_hint()}")

    async def aclose(self) -> None:
        await self._http.aclose()
