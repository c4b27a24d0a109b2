"""Anthropic Messages: the request body, and the SSE stream assembled into events.

Wire rules (as the recorded Messages API streams show them):

* dispatch on ``data.type`` (``event:`` lines may be rewritten by proxies); ``ping`` and
  unknown events or delta types are ignored; ``message_stop`` is the only clean end;
* an ``error`` event mid-stream is a classified failure (the turn is discarded);
* tool input is the concatenated ``partial_json`` parsed at ``content_block_stop``;
  a block that never stopped (cut by ``max_tokens``) is returned with ``input_error``;
* thinking text and signatures are kept exactly and replayed in their original order,
  with redacted_thinking ``data``, alongside that turn's tool results.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ketch.api import (
    Completed,
    ErrorKind,
    ImagePart,
    Message,
    ModelInfo,
    ProviderError,
    ProviderEvent,
    ProviderRequest,
    ReasoningDelta,
    ReasoningPart,
    StopReason,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolCallPart,
    ToolResultPart,
    Usage,
    new_id,
)
from ketch_provider_kit import (
    ANTHROPIC_IMAGES,
    HttpProvider,
    alternating,
    as_dict,
    classify,
    config_extra,
    fit_image,
    image_base64,
    known_context_window,
    malformed,
    open_stream,
    parse_arguments,
    request_json,
    sse_json,
)
from ketch_provider_kit.wire import per_message

log = logging.getLogger("ketch.providers.anthropic")

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 16_384

# The most output tokens each family accepts in max_tokens (longest prefix wins);
# a larger value is a 400, so requests are clamped to it.
OUTPUT_CAPS: dict[str, int] = {
    "claude-opus-4-5": 64_000,
    "claude-opus-4-1": 32_000,
    "claude-opus-4": 32_000,
    "claude-sonnet-4": 64_000,
    "claude-haiku-4": 64_000,
    "claude-3-7-sonnet": 64_000,
    "claude-3-5-sonnet": 8_192,
    "claude-3-5-haiku": 8_192,
    "claude-3-opus": 4_096,
    "claude-3-sonnet": 4_096,
    "claude-3-haiku": 4_096,
}

STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "pause_turn": "pause",
    "refusal": "refusal",
}


def output_cap(model: str) -> int | None:
    name = model.rsplit("/", 1)[-1].lower()
    best = max((p for p in OUTPUT_CAPS if name.startswith(p)), key=len, default=None)
    return OUTPUT_CAPS[best] if best else None


def messages_url(base_url: str | None, path: str = "messages") -> str:
    """``{base}/v1/messages``; a base URL that already ends in ``/v1`` is not doubled."""
    base = (base_url or DEFAULT_BASE_URL).strip().rstrip("/")
    if "://" not in base:
        base = "http://" + base
    if not base.endswith("/v1"):
        base += "/v1"
    return f"{base}/{path}"


class AnthropicProvider(HttpProvider):
    kind = "anthropic"
    key_env = "ANTHROPIC_API_KEY"

    def headers(self) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        headers.update(
            {str(k): str(v) for k, v in (config_extra(self.config, "headers") or {}).items()}
        )
        if self._key:
            headers["x-api-key"] = self._key
        return headers

    # --- request ----------------------------------------------------------------------

    def body(self, request: ProviderRequest) -> dict[str, Any]:
        model = request.model or self.model
        cap = output_cap(model)
        max_tokens = request.max_output_tokens or min(cap or DEFAULT_MAX_TOKENS, DEFAULT_MAX_TOKENS)
        thinking = self._thinking()
        if thinking and thinking.get("type") == "enabled":
            budget = int(thinking.get("budget_tokens", 0))
            if max_tokens <= budget:  # budget_tokens must stay below max_tokens
                max_tokens = budget + 4096
        if cap:
            max_tokens = min(max_tokens, cap)
        if (
            thinking
            and thinking.get("type") == "enabled"
            and int(thinking.get("budget_tokens", 0)) >= max_tokens
        ):
            thinking = {**thinking, "budget_tokens": max(1024, max_tokens - 1024)}
        cache = bool(config_extra(self.config, "prompt_cache", True))
        body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "stream": True}
        if request.system:
            system: dict[str, Any] = {"type": "text", "text": request.system}
            if cache:
                system["cache_control"] = {"type": "ephemeral"}
            body["system"] = [system]
        body["messages"] = anthropic_messages(request, self.kind, cache=cache)
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in request.tools
            ]
        if thinking:
            body["thinking"] = thinking
        else:
            for key in ("temperature", "top_p", "top_k"):
                if config_extra(self.config, key) is not None:
                    body[key] = config_extra(self.config, key)
        body.update(config_extra(self.config, "extra_body") or {})
        return body

    def _thinking(self) -> dict[str, Any] | None:
        """``thinking_budget = N`` (manual), ``thinking = "adaptive"``, or a table passed as is."""
        budget = config_extra(self.config, "thinking_budget")
        if isinstance(budget, int) and budget > 0:
            return {"type": "enabled", "budget_tokens": max(1024, budget)}
        thinking = config_extra(self.config, "thinking")
        if thinking == "adaptive":
            return {"type": "adaptive"}
        return dict(thinking) if isinstance(thinking, dict) else None

    # --- streaming --------------------------------------------------------------------

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        self.check_key()
        async with open_stream(
            self._http.get(),
            messages_url(self.config.base_url),
            provider=self.name,
            json_body=self.body(request),
            headers=self.headers(),
            secrets=self.secrets,
            auth_hint=self.auth_hint(),
        ) as response:
            async for event in self.decode(response):
                yield event

    async def decode(self, response: Any) -> AsyncIterator[ProviderEvent]:
        assembler = MessagesAssembler(kind=self.kind, provider=self.name, secrets=self.secrets)
        async for _, data in sse_json(response, provider=self.name, secrets=self.secrets):
            if not isinstance(data, dict):
                continue  # dispatch on data["type"]: event: lines may be rewritten by proxies
            for event in assembler.feed(data):
                yield event
            if assembler.finished:
                yield assembler.finish()
                return
        raise malformed(self.name, "the stream ended before message_stop (truncated response)")

    # --- models -----------------------------------------------------------------------

    async def list_models(self) -> list[ModelInfo]:
        self.check_key()
        data = await request_json(
            self._http.get(),
            "GET",
            messages_url(self.config.base_url, "models?limit=1000"),
            provider=self.name,
            headers=self.headers(),
            secrets=self.secrets,
            auth_hint=self.auth_hint(),
        )
        items = data.get("data") if isinstance(data, dict) else None
        models = [
            ModelInfo(
                id=item["id"], context_window=known_context_window(item["id"]), owned_by="anthropic"
            )
            for item in items or []
            if isinstance(item, dict) and isinstance(item.get("id"), str)
        ]
        return sorted(models, key=lambda m: m.id)

    async def context_window(self) -> int | None:
        return self.config.context_window


# --- history -> messages -----------------------------------------------------------------------


def anthropic_messages(
    request: ProviderRequest, kind: str, *, cache: bool = False
) -> list[dict[str, Any]]:
    """Alternating user/assistant messages. Consecutive same-role messages are merged
    (a tool-result message followed by a note becomes one user message, tool_result
    blocks first); the first message is always a user message."""

    # tool_result blocks must open the user message
    out = alternating(
        (_turn(m, kind) for m in request.messages),
        field="content",
        is_result=lambda block: block["type"] == "tool_result",
        opener={"type": "text", "text": "(continuing the conversation)"},
    )
    if cache and out and out[-1]["role"] == "user":
        out[-1]["content"][-1] = {**out[-1]["content"][-1], "cache_control": {"type": "ephemeral"}}
    return out


@per_message
def _turn(message: Message, kind: str) -> tuple[str, list[dict[str, Any]]]:
    """One message as (role, content blocks); cached per message (the blocks are never
    changed afterwards: the prompt-cache marker replaces the last block's dict)."""
    if message.role == "assistant":
        return "assistant", _assistant_blocks(message, kind)
    if message.role == "user":
        return "user", [
            _block(p)
            for p in message.parts
            if (isinstance(p, TextPart) and p.text) or isinstance(p, ImagePart)
        ]
    return "user", [_tool_result(p) for p in message.parts if isinstance(p, ToolResultPart)]


def _assistant_blocks(message: Message, kind: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ReasoningPart):
            if part.provider != kind:
                continue  # another provider's reasoning cannot be replayed here
            if part.redacted:
                blocks.append({"type": "redacted_thinking", "data": part.redacted})
            elif part.signature:
                blocks.append(
                    {"type": "thinking", "thinking": part.text, "signature": part.signature}
                )
        elif isinstance(part, TextPart):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolCallPart):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": part.id,
                    "name": part.name,
                    "input": {} if part.input_error else part.input,
                }
            )
    return blocks


def _block(part: TextPart | ImagePart) -> dict[str, Any]:
    fitted = fit_image(part, ANTHROPIC_IMAGES) if isinstance(part, ImagePart) else part
    if isinstance(fitted, TextPart):
        return {"type": "text", "text": fitted.text}
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": fitted.media_type, "data": image_base64(fitted)},
    }


def _tool_result(part: ToolResultPart) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.tool_call_id}
    if part.output or part.images:  # a tool_result holds text and image blocks
        block["content"] = ([{"type": "text", "text": part.output}] if part.output else []) + [
            _block(i) for i in part.images
        ]
    if not part.ok:
        block["is_error"] = True
    return block


# --- events -> provider events ---------------------------------------------------------------------


@dataclass
class _Block:
    type: str
    text: list[str] = field(default_factory=list)
    json: list[str] = field(default_factory=list)
    id: str | None = None
    name: str | None = None
    signature: str | None = None
    data: str | None = None
    stopped: bool = False


@dataclass
class MessagesAssembler:
    kind: str
    provider: str
    secrets: tuple[str | None, ...] = ()
    blocks: dict[int, _Block] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)
    stop_reason: str | None = None
    finished: bool = False

    def feed(self, data: dict[str, Any]) -> list[ProviderEvent]:
        kind = data.get("type")
        if kind == "error":
            raise classify(
                None, data, provider=self.provider, secrets=self.secrets, mid_stream=True
            )
        if kind == "message_start":
            message = as_dict(data.get("message"))
            self._usage(message.get("usage"))
        elif kind == "content_block_start":
            return self._start(data)
        elif kind == "content_block_delta":
            return self._delta(data)
        elif kind == "content_block_stop":
            block = self.blocks.get(data.get("index"))  # type: ignore[arg-type]
            if block is not None:
                block.stopped = True
        elif kind == "message_delta":
            delta = as_dict(data.get("delta"))
            if delta.get("stop_reason"):
                self.stop_reason = str(delta["stop_reason"])
            self._usage(data.get("usage"))
        elif kind == "message_stop":
            self.finished = True
        return []

    def _start(self, data: dict[str, Any]) -> list[ProviderEvent]:
        index = data.get("index")
        block_data = data.get("content_block")
        if not isinstance(index, int) or not isinstance(block_data, dict):
            return []
        block = _Block(type=str(block_data.get("type")))
        self.blocks[index] = block
        if block.type == "tool_use":
            block.id, block.name = block_data.get("id"), block_data.get("name")
            return [ToolCallDelta(index=index, id=block.id, name=block.name)]
        if block.type == "redacted_thinking":
            block.data = block_data.get("data")
        elif block.type == "text" and block_data.get("text"):
            block.text.append(block_data["text"])
            return [TextDelta(text=block_data["text"])]
        elif block.type == "thinking":
            block.signature = block_data.get("signature") or None
            if block_data.get("thinking"):
                block.text.append(block_data["thinking"])
                return [ReasoningDelta(text=block_data["thinking"])]
        return []

    def _delta(self, data: dict[str, Any]) -> list[ProviderEvent]:
        block = self.blocks.get(data.get("index"))  # type: ignore[arg-type]
        delta = data.get("delta")
        if block is None or not isinstance(delta, dict):
            return []
        kind = delta.get("type")
        if kind == "text_delta" and isinstance(delta.get("text"), str):
            block.text.append(delta["text"])
            return [TextDelta(text=delta["text"])] if delta["text"] else []
        if kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
            block.text.append(delta["thinking"])  # kept exactly, empty pieces included
            return [ReasoningDelta(text=delta["thinking"])] if delta["thinking"] else []
        if kind == "signature_delta" and isinstance(delta.get("signature"), str):
            block.signature = (block.signature or "") + delta["signature"]
        elif kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            block.json.append(delta["partial_json"])
            if delta["partial_json"]:
                return [ToolCallDelta(index=data["index"], arguments=delta["partial_json"])]
        return []

    def _usage(self, usage: Any) -> None:
        if isinstance(usage, dict):  # message_delta totals override message_start's
            for key in (
                "input_tokens",
                "output_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
            ):
                if isinstance(usage.get(key), int):
                    self.usage[key] = usage[key]

    def finish(self) -> Completed:
        if self.stop_reason == "model_context_window_exceeded":
            raise ProviderError(
                ErrorKind.CONTEXT_LENGTH,
                f"{self.provider}: the model's context window filled up while answering; compacting",
            )
        parts: list[Any] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if block.type == "thinking":
                parts.append(
                    ReasoningPart(
                        text="".join(block.text), signature=block.signature, provider=self.kind
                    )
                )
            elif block.type == "redacted_thinking" and block.data:
                parts.append(ReasoningPart(redacted=block.data, provider=self.kind))
            elif block.type == "text" and block.text:
                parts.append(TextPart(text="".join(block.text)))
            elif block.type == "tool_use":
                parts.append(self._call(block))
        usage = self.usage
        cache_read = usage.get("cache_read_input_tokens", 0)
        total_input = (
            usage.get("input_tokens", 0) + usage.get("cache_creation_input_tokens", 0) + cache_read
        )
        return Completed(
            message=Message(role="assistant", parts=tuple(parts)),
            stop_reason=STOP_REASONS.get(self.stop_reason or "end_turn", "other"),
            usage=Usage(
                input_tokens=total_input,
                output_tokens=usage.get("output_tokens", 0),
                cached_tokens=cache_read,
                cache_write_tokens=usage.get("cache_creation_input_tokens", 0),
            ),
        )

    def _call(self, block: _Block) -> ToolCallPart:
        raw = "".join(block.json)
        call_id, name = block.id or new_id("toolu_"), block.name or ""
        if not block.stopped:
            return ToolCallPart(
                id=call_id,
                name=name,
                input_error=f"cut off before its arguments were complete: {raw[:60]!r}",
            )
        parsed, problem = parse_arguments(raw)
        return ToolCallPart(id=call_id, name=name, input=parsed, input_error=problem)
