"""What both OpenAI kinds share: the base URL, the key, headers, models and windows."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ketch.api import (
    ModelInfo,
    ProviderConfig,
    ProviderError,
    ProviderEvent,
    ProviderRequest,
    Secret,
)
from ketch_provider_kit import (
    HttpError,
    HttpProvider,
    config_extra,
    known_context_window,
    open_stream,
    request_json,
)

log = logging.getLogger("ketch.providers.openai")

OFFICIAL_HOST = "api.openai.com"
DEFAULT_BASE_URL = "https://api.openai.com/v1"

# Fields some servers report per model in /models (vLLM, OpenRouter, LM Studio, ...).
_WINDOW_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length")


def api_base(base_url: str | None) -> str:
    """The URL the endpoint paths hang from. A base URL with no path at all gets ``/v1``
    (``http://localhost:8000`` and ``http://localhost:8000/v1`` both work); one with a
    path is used as given (``.../api/paas/v4``, ``.../openai/v1``)."""
    url = (base_url or DEFAULT_BASE_URL).strip().rstrip("/")
    parts = urlsplit(url if "://" in url else "http://" + url)
    path = parts.path.rstrip("/")
    if not path:
        path = "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


extra = config_extra


class OpenAIBase(HttpProvider):
    """State and requests common to chat completions and responses."""

    kind = "openai"
    key_env = "OPENAI_API_KEY"

    def __init__(self, config: ProviderConfig, key: Secret | None) -> None:
        super().__init__(config, key)
        self.base_url = api_base(config.base_url)
        self._window_learned = False

    # --- streaming, shared by chat completions and responses ---------------------------

    endpoint = ""  # "chat/completions" or "responses"
    max_tries = 3  # one request plus protocol fallbacks

    def body(self, request: ProviderRequest) -> dict[str, Any]:
        raise NotImplementedError

    def _fallback(self, error: HttpError, body: dict[str, Any]) -> bool:
        """Adjust what the next body will hold after a rejection this client understands."""
        return False

    def decode(self, response: Any) -> AsyncIterator[ProviderEvent]:
        raise NotImplementedError

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        self.check_key()
        await self.learn_context_window()
        for attempt in range(self.max_tries):
            body = self.body(request)  # rebuilt each try: fallbacks change the flags it reads
            try:
                async with open_stream(
                    self._http.get(),
                    self.url(self.endpoint),
                    provider=self.name,
                    json_body=body,
                    headers=self.headers(),
                    secrets=self.secrets,
                    auth_hint=self.auth_hint(),
                ) as response:
                    async for event in self.decode(response):
                        yield event
                return
            except HttpError as error:
                if (
                    attempt < self.max_tries - 1
                    and error.status is not None
                    and self._fallback(error, body)
                ):
                    continue
                raise

    def key_required(self) -> bool:
        """The official API always needs a key; local servers (LM Studio, vLLM, llama.cpp)
        usually do not, so a missing key is only an error there when config says so."""
        required = extra(self.config, "api_key_required")
        if required is not None:
            return bool(required)
        return urlsplit(self.base_url).hostname == OFFICIAL_HOST

    def headers(self) -> dict[str, str]:
        headers = {str(k): str(v) for k, v in (extra(self.config, "headers") or {}).items()}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        return headers

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}"

    # --- models ------------------------------------------------------------------------

    async def list_models(self) -> list[ModelInfo]:
        self.check_key()
        data = await request_json(
            self._http.get(),
            "GET",
            self.url("models"),
            provider=self.name,
            headers=self.headers(),
            secrets=self.secrets,
            auth_hint=self.auth_hint(),
        )
        items = data.get("data") if isinstance(data, dict) else data
        models: list[ModelInfo] = []
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                continue
            model_id = item["id"]
            window = _reported_window(item) or known_context_window(model_id)
            if model_id == self.model and self.config.context_window:
                window = self.config.context_window
            owner = item.get("owned_by")
            models.append(
                ModelInfo(
                    id=model_id,
                    context_window=window,
                    owned_by=owner if isinstance(owner, str) else None,
                )
            )
        return sorted(models, key=lambda m: m.id)

    async def context_window(self) -> int | None:
        await self.learn_context_window()
        return self.config.context_window

    async def learn_context_window(self) -> None:
        """Once per provider, for a model the table does not know, ask ``/models`` whether
        the server reports its window (vLLM's ``max_model_len``, OpenRouter's
        ``context_length``). Best effort: a failure leaves it unknown."""
        if self.config.context_window is not None or self._window_learned:
            return
        self._window_learned = True
        try:
            data = await request_json(
                self._http.get(),
                "GET",
                self.url("models"),
                provider=self.name,
                headers=self.headers(),
                secrets=self.secrets,
                timeout=5.0,
            )
        except ProviderError as exc:
            log.debug(
                "%s: could not read the model list for its context window: %s",
                self.name,
                exc.message,
            )
            return
        items = data.get("data") if isinstance(data, dict) else data
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and item.get("id") == self.model:
                self.config.context_window = _reported_window(item)
                return


def _reported_window(item: dict[str, Any]) -> int | None:
    for field in _WINDOW_FIELDS:
        value = item.get(field)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None
