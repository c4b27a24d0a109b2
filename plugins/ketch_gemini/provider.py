"""The Gemini API client: ``streamGenerateContent?alt=sse``, ``models`` and its windows.

The request (gemini_stream.md §2): ``contents`` (see :mod:`ketch_gemini.wire`),
``systemInstruction``, ``tools[].functionDeclarations`` with ``parametersJsonSchema``,
``toolConfig`` AUTO, and ``generationConfig`` (``maxOutputTokens``, sampling keys from
config, ``thinkingConfig``: ``includeThoughts`` on models that think, ``thinkingBudget``
or ``thinkingLevel`` from config, never both). The key goes in ``x-goog-api-key``,
never in the URL. A 400 that rejects the thinking settings is resent once without them.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from ketch.api import (
    ErrorKind,
    ModelInfo,
    Notice,
    ProviderConfig,
    ProviderError,
    ProviderEvent,
    ProviderRequest,
    Secret,
)
from ketch_gemini.assemble import GeminiAssembler
from ketch_gemini.errors import refine
from ketch_gemini.wire import SchemaRefused, contents, declaration
from ketch_provider_kit import (
    HttpError,
    HttpProvider,
    config_extra,
    open_stream,
    request_json,
    sse_json,
)

log = logging.getLogger("ketch.providers.gemini")

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
API_VERSION = "v1beta"
_THINKS = re.compile(r"gemini-(2\.5|[3-9])|thinking", re.IGNORECASE)
_SAMPLING = {
    "temperature": "temperature",
    "top_p": "topP",
    "top_k": "topK",
    "seed": "seed",
    "stop_sequences": "stopSequences",
}


def api_base(base_url: str | None) -> str:
    """``{base}/v1beta``: a base URL with or without the version works (a gateway may use another)."""
    url = (base_url or DEFAULT_BASE_URL).strip().rstrip("/")
    parts = urlsplit(url if "://" in url else "https://" + url)
    path = parts.path.rstrip("/")
    if not re.search(r"/v\d+(alpha|beta)?\d*$", path):
        path += f"/{API_VERSION}"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def model_path(model: str) -> str:
    return quote(model.removeprefix("models/"), safe="-._~@")


class GeminiProvider(HttpProvider):
    kind = "gemini"
    key_env = "GEMINI_API_KEY"

    def __init__(self, config: ProviderConfig, key: Secret | None) -> None:
        if key is None and os.environ.get("GOOGLE_API_KEY"):
            key = Secret(os.environ["GOOGLE_API_KEY"])  # the SDKs' other variable
        super().__init__(config, key)
        self.base_url = api_base(config.base_url)
        self._thinking = True  # send thinkingConfig (off after the server rejects it)
        self._window_asked = False
        self._refused_notes: list[str] = []

    def auth_hint(self) -> str:
        if self.config.api_key_env:
            return f"set {self.config.api_key_env} or run `ketch auth set {self.name}`"
        return f"set GEMINI_API_KEY (or GOOGLE_API_KEY) or run `ketch auth set {self.name}`"

    def headers(self) -> dict[str, str]:
        headers = {str(k): str(v) for k, v in (config_extra(self.config, "headers") or {}).items()}
        if self._key:
            headers["x-goog-api-key"] = self._key
        return headers

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path}"

    # --- request ----------------------------------------------------------------------

    def body(self, request: ProviderRequest) -> dict[str, Any]:
        model = request.model or self.model
        body: dict[str, Any] = {"contents": contents(request.messages, model)}
        if request.system:
            body["systemInstruction"] = {"parts": [{"text": request.system}]}
        declarations = []
        self._refused_notes = []
        for tool in request.tools:
            try:
                declarations.append(declaration(tool))
            except SchemaRefused as why:
                self._refused_notes.append(
                    f"{self.name}: tool {tool.name} is not offered to Gemini: {why}"
                )
        if declarations:
            body["tools"] = [{"functionDeclarations": declarations}]
            body["toolConfig"] = {"functionCallingConfig": {"mode": "AUTO"}}
        generation: dict[str, Any] = {}
        if request.max_output_tokens:
            generation["maxOutputTokens"] = request.max_output_tokens
        for key, wire in _SAMPLING.items():
            if config_extra(self.config, key) is not None:
                generation[wire] = config_extra(self.config, key)
        thinking = self._thinking_config(model)
        if thinking:
            generation["thinkingConfig"] = thinking
        if generation:
            body["generationConfig"] = generation
        body.update(config_extra(self.config, "extra_body") or {})
        return body

    def _thinking_config(self, model: str) -> dict[str, Any] | None:
        if not self._thinking:
            return None
        budget, level = (
            config_extra(self.config, "thinking_budget"),
            config_extra(self.config, "thinking_level"),
        )
        if budget is not None and level is not None:
            raise ProviderError(
                ErrorKind.CONFIG,
                f"{self.name}: set thinking_budget or thinking_level, not both (Gemini rejects the pair)",
            )
        include = config_extra(self.config, "include_thoughts")
        if include is None:
            include = bool(_THINKS.search(model))
        config: dict[str, Any] = {}
        if budget is not None:
            config["thinkingBudget"] = int(budget)
        if level is not None:
            config["thinkingLevel"] = str(level)
        if include:
            config["includeThoughts"] = True
        return config or None

    def _fallback(self, error: HttpError) -> bool:
        """Resend once without thinkingConfig when a model rejects it."""
        said = (error.detail.message if error.detail else "").lower()
        if (
            self._thinking
            and error.status == 400
            and error.kind == ErrorKind.BAD_REQUEST
            and ("thinking" in said or "include_thoughts" in said or "includethoughts" in said)
        ):
            log.info(
                "%s: the model rejected the thinking settings; continuing without them", self.name
            )
            self._thinking = False
            return True
        return False

    # --- streaming --------------------------------------------------------------------

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        self.check_key()
        model = request.model or self.model
        url = self.url(f"models/{model_path(model)}:streamGenerateContent?alt=sse")
        for attempt in range(2):
            body = self.body(request)
            for note in self._refused_notes:
                yield Notice(message=note)
            try:
                async with open_stream(
                    self._http.get(),
                    url,
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
                refine(error, self.auth_hint())
                if attempt == 0 and self._fallback(error):
                    continue
                raise

    async def decode(self, response: Any) -> AsyncIterator[ProviderEvent]:
        assembler = GeminiAssembler(provider=self.name, secrets=self.secrets)
        async for _, chunk in sse_json(response, provider=self.name, secrets=self.secrets):
            for event in assembler.feed(chunk):
                yield event
        for event in assembler.finish():
            yield event

    # --- models ------------------------------------------------------------------------

    async def _get(self, path: str, **kwargs: Any) -> Any:
        try:
            return await request_json(
                self._http.get(),
                "GET",
                self.url(path),
                provider=self.name,
                headers=self.headers(),
                secrets=self.secrets,
                auth_hint=self.auth_hint(),
                **kwargs,
            )
        except HttpError as error:
            raise refine(error, self.auth_hint()) from None

    async def list_models(self) -> list[ModelInfo]:
        """Chat models (``generateContent`` in ``supportedGenerationMethods``), every page."""
        self.check_key()
        models: list[ModelInfo] = []
        token = ""
        for _ in range(20):
            data = await self._get(
                "models?pageSize=1000" + (f"&pageToken={quote(token)}" if token else "")
            )
            for item in data.get("models") or [] if isinstance(data, dict) else []:
                info = _model_info(item)
                if info is not None:
                    models.append(info)
            token = (
                data["nextPageToken"]
                if isinstance(data, dict) and isinstance(data.get("nextPageToken"), str)
                else ""
            )
            if not token:
                break
        return sorted(models, key=lambda m: m.id)

    async def context_window(self) -> int | None:
        """``inputTokenLimit`` from ``GET models/{model}``, asked once; config wins."""
        if self.config.context_window is None and not self._window_asked:
            self._window_asked = True
            try:
                info = _model_info(await self._get(f"models/{model_path(self.model)}", timeout=5.0))
            except ProviderError as exc:
                log.debug("%s: could not read the model's limits: %s", self.name, exc.message)
                info = None
            if info is not None and info.context_window:
                self.config.context_window = info.context_window
        return self.config.context_window


def _model_info(item: Any) -> ModelInfo | None:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        return None
    methods = item.get("supportedGenerationMethods")
    if isinstance(methods, list) and "generateContent" not in methods:
        return None  # embedding and other non-chat models
    limit = item.get("inputTokenLimit")
    output = item.get("outputTokenLimit")
    return ModelInfo(
        id=item["name"].removeprefix("models/"),
        context_window=limit if isinstance(limit, int) and limit > 0 else None,
        owned_by="google",
        max_output_tokens=output if isinstance(output, int) and output > 0 else None,
    )
