"""Ollama native: ``/api/chat`` NDJSON streaming, ``/api/show``, ``/api/tags``, ``/api/version``.

Wire rules (as the recorded /api/chat NDJSON streams show them):

* one JSON object per line; every line is checked for ``error`` first; ``done: true``
  is the only clean end, and its line may still carry content;
* tool calls arrive complete, with object arguments (validated: a string or a nested
  ``{"name", "arguments"}`` happens), in lines before ``done``; accumulated across lines;
* ``message.thinking`` is reasoning (lines with empty content included); older builds
  leak ``<think>`` into the content, so a tag splitter is the fallback;
* ``options.num_ctx`` is always sent, and ``truncate: false`` so an over-long prompt is
  an error instead of silently dropped history.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ketch.api import (
    Completed,
    ErrorKind,
    ImagePart,
    Message,
    ModelInfo,
    Notice,
    ProviderConfig,
    ProviderError,
    ProviderEvent,
    ProviderRequest,
    ReasoningDelta,
    ReasoningPart,
    Secret,
    StopReason,
    TextPart,
    ToolCallDelta,
    ToolCallPart,
    ToolResultPart,
    Usage,
    new_id,
)
from ketch_provider_kit import (
    OLLAMA_IMAGES,
    ContentReader,
    HttpProvider,
    as_dict,
    as_int,
    classify,
    config_extra,
    fit_image,
    image_base64,
    malformed,
    ndjson_lines,
    open_stream,
    parse_arguments,
    request_json,
    without_images,
)
from ketch_provider_kit.wire import per_message

log = logging.getLogger("ketch.providers.ollama")

DEFAULT_HOST = "http://127.0.0.1:11434"
# The window sent when config does not say: large enough for an agent's system prompt,
# tool schemas and some history, small enough to fit a laptop GPU. Never above what the
# model was trained for.
DEFAULT_NUM_CTX = 32_768


def ollama_base(value: str | None) -> str:
    """A base URL from ``OLLAMA_HOST`` the way the ``ollama`` CLI reads it: ``host``,
    ``host:port``, ``http://host[:port]``; no scheme means http and port 11434; an
    explicit ``http://`` or ``https://`` without a port means 80 or 443. ``0.0.0.0``
    (a listen address) is reached as ``127.0.0.1``. A trailing ``/api`` or ``/v1`` is dropped."""
    text = (value or "").strip()
    if not text:
        return DEFAULT_HOST
    scheme, sep, rest = text.partition("://")
    port = 11434
    if not sep:
        scheme, rest = "http", text
    elif scheme == "http":
        port = 80
    elif scheme == "https":
        port = 443
    hostport, _, path = rest.partition("/")
    parts = urlsplit("//" + hostport)
    try:
        port = parts.port or port
    except ValueError:
        port = 11434
    host = parts.hostname or "127.0.0.1"
    host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    if ":" in host:
        host = f"[{host}]"
    path = re.sub(r"/(api|v1)$", "", "/" + path.strip("/")).rstrip("/")
    return f"{scheme}://{host}:{port}{path}"


@dataclass
class ModelFacts:
    """What ``/api/show`` says about a model."""

    trained_context: int | None = None
    configured_num_ctx: int | None = None  # a Modelfile's PARAMETER num_ctx
    capabilities: list[str] | None = None  # None: an older server that does not say


def model_facts(data: Any) -> ModelFacts:
    facts = ModelFacts()
    if not isinstance(data, dict):
        return facts
    info = as_dict(data.get("model_info"))
    arch = info.get("general.architecture")
    length = info.get(f"{arch}.context_length") if isinstance(arch, str) else None
    if isinstance(length, int) and length > 0:
        facts.trained_context = length
    parameters = data.get("parameters")
    if isinstance(parameters, str):
        found = re.search(r"^\s*num_ctx\s+(\d+)", parameters, re.MULTILINE)
        if found:
            facts.configured_num_ctx = int(found.group(1))
    capabilities = data.get("capabilities")
    if isinstance(capabilities, list):
        facts.capabilities = [str(c) for c in capabilities]
    return facts


class OllamaProvider(HttpProvider):
    kind = "ollama"
    key_env = "OLLAMA_API_KEY"

    def __init__(self, config: ProviderConfig, key: Secret | None = None) -> None:
        self._configured_window = config.context_window
        super().__init__(config, key)
        self.config.context_window = config.context_window  # Ollama reports the real one
        self.base_url = ollama_base(config.base_url)
        self._facts: ModelFacts | None = None
        self._warned_tools = False
        self._warned_images = False
        self._pending_notices: list[str] = []

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}"

    def key_required(self) -> bool:
        return False  # a local Ollama needs none; OLLAMA_API_KEY is sent when set

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key}"} if self._key else {}

    def auth_hint(self) -> str:
        return f"set {self.config.api_key_env or self.key_env} (a local Ollama needs no key; check base_url)"

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        return request_json(
            self._http.get(),
            method,
            self.url(path),
            provider=self.name,
            headers=self.headers(),
            secrets=self.secrets,
            auth_hint=self.auth_hint(),
            **kwargs,
        )

    # --- model facts ----------------------------------------------------------------

    async def facts(self) -> ModelFacts:
        """``/api/show`` for this model, once. A model that is not pulled is a clear error."""
        if self._facts is None:
            try:
                data = await self._request("POST", "api/show", json_body={"model": self.model})
            except ProviderError as exc:
                if exc.kind == ErrorKind.NOT_FOUND:
                    raise ProviderError(
                        ErrorKind.NOT_FOUND,
                        f"{self.name}: model '{self.model}' is not available: run `ollama pull {self.model}`, or pick one from `ketch models`",
                    ) from None
                if exc.kind in (
                    ErrorKind.NETWORK,
                    ErrorKind.TIMEOUT,
                    ErrorKind.CONFIG,
                    ErrorKind.AUTH,
                ):
                    raise
                log.debug("%s: /api/show failed (%s); using defaults", self.name, exc.message)
                data = None
            self._facts = model_facts(data)
            if self.config.context_window is None:
                self.config.context_window = self.num_ctx(self._facts)  # the loop budgets with it
        return self._facts

    def num_ctx(self, facts: ModelFacts) -> int:
        """The window to run with: config, else the Modelfile's num_ctx, else the default
        capped by the trained length."""
        if self._configured_window:
            return self._configured_window
        if facts.configured_num_ctx:
            return facts.configured_num_ctx
        return min(DEFAULT_NUM_CTX, facts.trained_context or DEFAULT_NUM_CTX)

    # --- request ----------------------------------------------------------------------

    def body(self, request: ProviderRequest, facts: ModelFacts) -> dict[str, Any]:
        options: dict[str, Any] = {"num_ctx": self.num_ctx(facts)}
        if request.max_output_tokens:
            options["num_predict"] = request.max_output_tokens
        options.update(config_extra(self.config, "options") or {})
        options["num_ctx"] = self.num_ctx(facts)  # always ours: see the module docstring
        capabilities = facts.capabilities
        if capabilities is not None and "vision" not in capabilities:
            history, dropped = without_images(request.messages)
            if dropped:
                request = request.model_copy(update={"messages": history})
                if not self._warned_images:
                    self._warned_images = True
                    self._pending_notices.append(
                        f"{self.name}: model '{self.model}' does not take images (ollama show lists no 'vision' capability); "
                        "sending the text alone. Pick a vision model (llava, qwen2.5vl, gemma3) to show it pictures."
                    )
        body: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": ollama_messages(request, self.kind),
            "stream": True,
            "options": options,
            "truncate": False,
        }
        if request.tools:
            if capabilities is None or "tools" in capabilities:
                body["tools"] = [
                    {
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.input_schema,
                        },
                    }
                    for t in request.tools
                ]
            elif not self._warned_tools:
                self._warned_tools = True
                self._pending_notices.append(
                    f"{self.name}: model '{self.model}' does not support tools (ollama show lists no 'tools' capability); "
                    "asking without them, so it can only answer in text. Pick a model with tool support to let it act."
                )
        think = config_extra(self.config, "think")
        if think is not None:
            body["think"] = think
        elif capabilities is not None and "thinking" in capabilities:
            body["think"] = (
                "medium" if "gpt-oss" in self.model else True
            )  # gpt-oss takes only levels
        if config_extra(self.config, "keep_alive") is not None:
            body["keep_alive"] = config_extra(self.config, "keep_alive")
        return body

    # --- streaming ---------------------------------------------------------------------

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        facts = await self.facts()
        body = self.body(request, facts)
        while self._pending_notices:
            yield Notice(message=self._pending_notices.pop(0))
        num_ctx = body["options"]["num_ctx"]
        try:
            async with open_stream(
                self._http.get(),
                self.url("api/chat"),
                provider=self.name,
                json_body=body,
                headers=self.headers(),
                secrets=self.secrets,
                auth_hint=self.auth_hint(),
            ) as response:
                async for event in self.decode(response, num_ctx=num_ctx):
                    yield event
        except ProviderError as error:
            if error.kind == ErrorKind.CONTEXT_LENGTH and error.context_limit is None:
                error.context_limit = (
                    num_ctx  # Ollama says "too long" without numbers; we know the window
                )
            raise

    async def decode(
        self, response: Any, *, num_ctx: int | None = None
    ) -> AsyncIterator[ProviderEvent]:
        assembler = ChatLinesAssembler(kind=self.kind, provider=self.name, secrets=self.secrets)
        async for line in ndjson_lines(response):
            try:
                data = json.loads(line)
            except ValueError:
                raise malformed(
                    self.name, "the stream sent a line that is not JSON", line, self.secrets
                ) from None
            for event in assembler.feed(data):
                yield event
            if assembler.done:
                for event in assembler.flush():
                    yield event
                completed = assembler.finish()
                if num_ctx and completed.usage.input_tokens >= num_ctx:
                    yield Notice(
                        message=f"{self.name}: the prompt filled the whole {num_ctx}-token window (num_ctx); it may have been cut"
                    )
                yield completed
                return
        raise malformed(self.name, "the stream ended before done: true (truncated response)")

    # --- models ------------------------------------------------------------------------

    async def list_models(self) -> list[ModelInfo]:
        data = await self._request("GET", "api/tags")
        names = (
            [
                m["name"]
                for m in (data.get("models") or [])
                if isinstance(m, dict) and isinstance(m.get("name"), str)
            ]
            if isinstance(data, dict)
            else []
        )
        limit = asyncio.Semaphore(4)

        async def trained(name: str) -> int | None:
            async with limit:
                try:
                    show = await self._request(
                        "POST", "api/show", json_body={"model": name}, timeout=10.0
                    )
                except ProviderError:
                    return None
                return model_facts(show).trained_context

        windows = await asyncio.gather(*(trained(n) for n in names))
        return sorted(
            (ModelInfo(id=n, context_window=w) for n, w in zip(names, windows, strict=True)),
            key=lambda m: m.id,
        )

    async def context_window(self) -> int | None:
        if self._configured_window:
            return self._configured_window
        return self.num_ctx(await self.facts())


async def detect_ollama(base_url: str | None = None, timeout: float = 1.0) -> ProviderConfig | None:
    """A config named ``ollama`` when ``GET /api/version`` answers (at ``OLLAMA_HOST`` or
    localhost:11434); its most recent model becomes the model. None otherwise."""
    import os

    from ketch_import_kit.httpx import httpx

    base = ollama_base(base_url or os.environ.get("OLLAMA_HOST"))
    try:
        async with httpx.AsyncClient(timeout=timeout, trust_env=False) as client:
            version = await client.get(f"{base}/api/version")
            if version.status_code != 200 or not isinstance(version.json().get("version"), str):
                return None
            tags = await client.get(f"{base}/api/tags")
            models = tags.json().get("models") if tags.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        log.debug("no Ollama at %s: %s", base, type(exc).__name__)
        return None
    names = [
        m["name"] for m in models or [] if isinstance(m, dict) and isinstance(m.get("name"), str)
    ]
    return ProviderConfig(
        name="ollama", kind="ollama", base_url=base, model=names[0] if names else None
    )


# --- history -> messages ------------------------------------------------------------------------


def ollama_messages(request: ProviderRequest, kind: str) -> list[dict[str, Any]]:
    """Content is always a string; tool-call arguments are objects; one ``tool`` message
    per result, in call order, naming the tool (and its call id for newer servers)."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages += _wire.flat(tuple(request.messages), kind)
    return messages


@per_message
def _wire(message: Message, kind: str) -> list[dict[str, Any]]:
    """One message in Ollama's form (one or more wire messages); cached per message."""
    if message.role == "user":
        user: dict[str, Any] = {
            "role": "user",
            "content": "\n\n".join(p.text for p in message.parts if isinstance(p, TextPart)),
        }
        images = _images(message.images, user)
        if images:
            user["images"] = images
        return [user]
    if message.role == "assistant":
        return [_assistant(message, kind)]
    out: list[dict[str, Any]] = []
    shown: list[ImagePart] = []
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            out.append(
                {
                    "role": "tool",
                    "content": part.output,
                    "tool_name": part.name,
                    "tool_call_id": part.tool_call_id,
                }
            )
            shown += part.images
    if shown:  # tool messages carry text: the images follow in a user message
        names = ", ".join(
            sorted({p.name for p in message.parts if isinstance(p, ToolResultPart) and p.images})
        )
        follow: dict[str, Any] = {"role": "user", "content": f"(the image(s) returned by {names})"}
        follow["images"] = _images(shown, follow)
        out.append(follow)
    return out


def _images(images: list[ImagePart], message: dict[str, Any]) -> list[str]:
    """Base64 images for ``images``; one that cannot be sent adds its note to the content."""
    out: list[str] = []
    for image in images:
        fitted = fit_image(image, OLLAMA_IMAGES)
        if isinstance(fitted, TextPart):
            message["content"] = f"{message['content']}\n{fitted.text}".strip()
        else:
            out.append(image_base64(fitted))
    return out


def _assistant(message: Message, kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": message.text}
    thinking = "".join(
        p.text for p in message.parts if isinstance(p, ReasoningPart) and p.provider == kind
    )
    if thinking:
        out["thinking"] = thinking
    calls = message.tool_calls
    if calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {
                    "index": i,
                    "name": c.name,
                    "arguments": {} if c.input_error else c.input,
                },
            }
            for i, c in enumerate(calls)
        ]
    return out


# --- lines -> provider events -----------------------------------------------------------------------


@dataclass
class ChatLinesAssembler:
    kind: str
    provider: str
    secrets: tuple[str | None, ...] = ()
    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    calls: list[ToolCallPart] = field(default_factory=list)
    content: ContentReader = field(init=False)
    done: bool = False
    done_reason: str | None = None
    usage: Usage = field(default_factory=Usage)

    def __post_init__(self) -> None:
        self.content = ContentReader(self.text, self.thinking)

    def feed(self, data: Any) -> list[ProviderEvent]:
        if not isinstance(data, dict):
            raise malformed(
                self.provider, "the stream sent a line that is not an object", json.dumps(data)[:80]
            )
        if data.get("error"):
            raise classify(
                None, data, provider=self.provider, secrets=self.secrets, mid_stream=True
            )
        events: list[ProviderEvent] = []
        message = as_dict(data.get("message"))
        thinking = message.get("thinking")
        if isinstance(thinking, str) and thinking:
            self.thinking.append(thinking)
            events.append(ReasoningDelta(text=thinking))
        content = message.get("content")
        if isinstance(content, str) and content:
            # With a parser the server sends thinking separately; older builds leak <think>.
            events += self.content.feed(content, server_separates=bool(self.thinking))
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict):
                events.append(self._call(call))
        if data.get("done") is True:
            self.done = True
            self.done_reason = (
                data.get("done_reason") if isinstance(data.get("done_reason"), str) else None
            )
            # prompt_eval_count is omitted when the prompt was cached: 0, and the loop estimates.
            self.usage = Usage(
                input_tokens=as_int(data.get("prompt_eval_count")),
                output_tokens=as_int(data.get("eval_count")),
            )
        return events

    def _call(self, call: dict[str, Any]) -> ToolCallDelta:
        function = as_dict(call.get("function"))
        name = function.get("name") if isinstance(function.get("name"), str) else ""
        arguments = function.get("arguments")
        # Some models wrap the call again: {"name": same, "arguments": {...}} (ollama #11805).
        if (
            isinstance(arguments, dict)
            and set(arguments) == {"name", "arguments"}
            and arguments.get("name") == name
        ):
            arguments = arguments["arguments"]
        problem: str | None = None
        if isinstance(arguments, str):
            arguments, problem = parse_arguments(arguments)
        elif arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict):
            arguments, problem = {}, f"arguments are not an object: {json.dumps(arguments)[:60]}"
        call_id = (
            call.get("id")
            if isinstance(call.get("id"), str) and call.get("id")
            else new_id("call_")[:13]
        )
        index = len(self.calls)
        self.calls.append(ToolCallPart(id=call_id, name=name, input=arguments, input_error=problem))
        return ToolCallDelta(
            index=index, id=call_id, name=name, arguments=json.dumps(arguments, ensure_ascii=False)
        )

    def flush(self) -> list[ProviderEvent]:
        return self.content.flush()

    def finish(self) -> Completed:
        parts: list[Any] = []
        thinking = "".join(self.thinking)
        if thinking:
            data = {"source": "think_tag"} if self.content.tagged else None
            parts.append(ReasoningPart(text=thinking, provider=self.kind, provider_data=data))
        text = "".join(self.text)
        if text:
            parts.append(TextPart(text=text))
        parts += self.calls
        stop: StopReason = "end_turn"
        if self.done_reason == "length":
            stop = "max_tokens"
        elif self.calls:  # done_reason stays "stop" after tool calls
            stop = "tool_use"
        return Completed(
            message=Message(role="assistant", parts=tuple(parts)),
            stop_reason=stop,
            usage=self.usage,
        )
