"""The OpenAI Responses API with ``store: false``: nothing is kept server-side, so every
request rebuilds the whole input (messages, function calls, their outputs) and replays
the encrypted reasoning items of earlier steps. ``encrypted_content`` is read from
``response.output_item.done``: the value in ``.added`` is provisional and differs.

Events: ``response.output_item.added|done``, ``response.output_text.delta``,
``response.reasoning_summary_text.delta`` (and ``reasoning_text``),
``response.function_call_arguments.delta|done``; the clean end is
``response.completed`` or ``response.incomplete``; ``response.failed`` and ``error``
are failures. Anything else is ignored.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ketch.api import (
    Completed,
    ErrorKind,
    ImagePart,
    Message,
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
from ketch_openai.base import OpenAIBase, extra
from ketch_openai.chat import tool_arguments
from ketch_provider_kit import (
    OPENAI_IMAGES,
    HttpError,
    as_dict,
    as_int,
    as_list,
    classify,
    fit_image,
    image_data_uri,
    malformed,
    parse_arguments,
    sse_json,
)
from ketch_provider_kit.wire import per_message

log = logging.getLogger("ketch.providers.openai")

_REASONING_MODEL = re.compile(r"^(o\d|gpt-5|codex|gpt-oss)", re.IGNORECASE)
_TERMINAL = ("response.completed", "response.incomplete")
_IMPLIED = {
    "response.output_text.delta": "message",
    "response.refusal.delta": "message",
    "response.reasoning_summary_text.delta": "reasoning",
    "response.reasoning_text.delta": "reasoning",
    "response.function_call_arguments.delta": "function_call",
}


def is_reasoning_model(model: str) -> bool:
    return bool(_REASONING_MODEL.match(model.rsplit("/", 1)[-1]))


class ResponsesProvider(OpenAIBase):
    kind = "openai-responses"
    endpoint = "responses"
    max_tries = 4  # three things a server may refuse: effort, summaries, encrypted reasoning

    def __init__(self, config: Any, key: Any) -> None:
        super().__init__(config, key)
        reasoning = is_reasoning_model(self.model)
        self._include_encrypted = bool(extra(self.config, "include_encrypted_reasoning", reasoning))
        self._summary: str | None = extra(
            self.config, "reasoning_summary", "auto" if reasoning else None
        )
        self._effort: str | None = extra(self.config, "reasoning_effort")

    def body(self, request: ProviderRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model or self.model,
            "input": response_items(request, self.kind),
            "stream": True,
            "store": False,
        }
        if request.system:
            body["instructions"] = request.system
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                    # Required by the API's types; ketch's schemas (optional fields with
                    # defaults) are not strict-mode schemas, so strict is off.
                    "strict": False,
                }
                for t in request.tools
            ]
        if request.max_output_tokens:
            body["max_output_tokens"] = request.max_output_tokens
        reasoning = {k: v for k, v in (("effort", self._effort), ("summary", self._summary)) if v}
        if reasoning:
            body["reasoning"] = reasoning
        if self._include_encrypted:
            body["include"] = ["reasoning.encrypted_content"]
        for key in ("temperature", "top_p", "parallel_tool_calls"):
            value = extra(self.config, key)
            if value is not None:
                body[key] = value
        body.update(extra(self.config, "extra_body") or {})
        return body

    def _fallback(self, error: HttpError, body: dict[str, Any]) -> bool:
        """Resend once without what a model or an unverified organisation rejects:
        the reasoning summary, reasoning settings, or encrypted reasoning."""
        if error.status != 400 or error.kind != ErrorKind.BAD_REQUEST or error.detail is None:
            return False
        said = f"{error.detail.param or ''} {error.detail.message}".lower()
        if self._summary and "summary" in said:
            log.info("%s: reasoning summaries refused; continuing without them", self.name)
            self._summary = None
            return True
        if self._effort and "reasoning" in said and "effort" in said:
            self._effort = None
            return True
        if self._include_encrypted and ("encrypted" in said or "include" in said):
            log.info("%s: encrypted reasoning refused; continuing without it", self.name)
            self._include_encrypted = False
            return True
        return False

    async def decode(self, response: Any) -> AsyncIterator[ProviderEvent]:
        assembler = ResponsesAssembler(kind=self.kind, provider=self.name, secrets=self.secrets)
        async for name, data in sse_json(response, provider=self.name, secrets=self.secrets):
            if not isinstance(data, dict):
                continue
            for event in assembler.feed(str(data.get("type") or name), data):
                yield event
            if assembler.finished:
                yield assembler.finish()
                return
        raise malformed(
            self.name, "the stream ended before response.completed (truncated response)"
        )


# --- history -> input items ------------------------------------------------------------------


def response_items(request: ProviderRequest, kind: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    items += _items.flat(tuple(request.messages), kind)
    return items


@per_message
def _items(message: Message, kind: str) -> list[dict[str, Any]]:
    """One message as Responses input items; cached per message."""
    if message.role == "user":
        return [
            {
                "role": "user",
                "content": [
                    _input(p) for p in message.parts if isinstance(p, (TextPart, ImagePart))
                ],
            }
        ]
    if message.role == "assistant":
        return _assistant_items(message, kind)
    items: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            output: Any = part.output
            if part.images:  # function_call_output takes input_text/input_image parts
                output = [
                    {"type": "input_text", "text": part.output},
                    *(_input(i) for i in part.images),
                ]
            items.append(
                {"type": "function_call_output", "call_id": part.tool_call_id, "output": output}
            )
    return items


def _input(part: TextPart | ImagePart) -> dict[str, Any]:
    fitted = fit_image(part, OPENAI_IMAGES) if isinstance(part, ImagePart) else part
    if isinstance(fitted, TextPart):
        return {"type": "input_text", "text": fitted.text}
    return {"type": "input_image", "image_url": image_data_uri(fitted), "detail": "auto"}


def _assistant_items(message: Message, kind: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    text: list[str] = []

    def flush() -> None:
        if text:
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "".join(text)}],
                }
            )
            text.clear()

    for part in message.parts:
        if isinstance(part, ReasoningPart):
            item = (part.provider_data or {}).get("item")
            if part.provider == kind and isinstance(item, dict):
                flush()
                items.append(dict(item))  # replayed as received, without its id (store: false)
        elif isinstance(part, TextPart):
            text.append(part.text)
        elif isinstance(part, ToolCallPart):
            flush()
            items.append(
                {
                    "type": "function_call",
                    "call_id": part.id,
                    "name": part.name,
                    "arguments": tool_arguments(part),
                }
            )
    flush()
    return items


# --- events -> provider events ---------------------------------------------------------------


@dataclass
class _Item:
    type: str
    added: dict[str, Any]
    done: dict[str, Any] | None = None
    text: list[str] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)
    final_arguments: str | None = None
    summary_parts: int = 0


@dataclass
class ResponsesAssembler:
    kind: str
    provider: str
    secrets: tuple[str | None, ...] = ()
    items: dict[int, _Item] = field(default_factory=dict)
    finished: bool = False
    response: dict[str, Any] = field(default_factory=dict)
    refused: bool = False

    def feed(self, kind: str, data: dict[str, Any]) -> list[ProviderEvent]:
        if kind == "error":
            raise classify(
                None, data, provider=self.provider, secrets=self.secrets, mid_stream=True
            )
        if kind == "response.failed":
            response = as_dict(data.get("response"))
            error = response.get("error") or {
                "message": "the response failed",
                "code": "server_error",
            }
            raise classify(
                None,
                {"error": error},
                provider=self.provider,
                secrets=self.secrets,
                mid_stream=True,
            )
        if kind in _TERMINAL:
            self.response = as_dict(data.get("response"))
            self.finished = True
            return []
        index = data.get("output_index")
        if (
            kind == "response.output_item.added"
            and isinstance(data.get("item"), dict)
            and isinstance(index, int)
        ):
            item = data["item"]
            self.items[index] = _Item(type=str(item.get("type")), added=item)
            if item.get("type") == "function_call":
                return [
                    ToolCallDelta(
                        index=index,
                        id=item.get("call_id"),
                        name=item.get("name"),
                        arguments=item.get("arguments") or "",
                    )
                ]
            return []
        slot = self.items.get(index) if isinstance(index, int) else None
        if slot is None and isinstance(index, int) and kind in _IMPLIED:
            # A server that skipped output_item.added: the delta says what the item is.
            slot = self.items[index] = _Item(type=_IMPLIED[kind], added={})
        if slot is None:
            return []
        delta = data.get("delta") if isinstance(data.get("delta"), str) else ""
        if kind in ("response.output_text.delta", "response.refusal.delta") and delta:
            self.refused = self.refused or kind == "response.refusal.delta"
            slot.text.append(delta)
            return [TextDelta(text=delta)]
        if kind == "response.reasoning_summary_part.added":
            slot.summary_parts += 1
            if slot.summary_parts > 1 and slot.text:
                slot.text.append("\n\n")
                return [ReasoningDelta(text="\n\n")]
            return []
        if (
            kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")
            and delta
        ):
            slot.text.append(delta)
            return [ReasoningDelta(text=delta)]
        if kind == "response.function_call_arguments.delta" and delta:
            slot.arguments.append(delta)
            return [ToolCallDelta(index=index, arguments=delta)]  # type: ignore[arg-type]
        if kind == "response.function_call_arguments.done" and isinstance(
            data.get("arguments"), str
        ):
            slot.final_arguments = data["arguments"]
        elif kind == "response.output_item.done" and isinstance(data.get("item"), dict):
            slot.done = data["item"]
        return []

    def finish(self) -> Completed:
        output = as_list(self.response.get("output"))
        parts: list[Any] = []
        for index in sorted(self.items):
            slot = self.items[index]
            final = (
                slot.done
                or (
                    output[index]
                    if index < len(output) and isinstance(output[index], dict)
                    else None
                )
                or slot.added
            )
            if slot.type == "reasoning":
                parts.append(self._reasoning(slot, final))
            elif slot.type == "message":
                text = "".join(slot.text) or _message_text(final)
                if text:
                    parts.append(TextPart(text=text))
            elif slot.type == "function_call":
                parts.append(self._call(slot, final))
        incomplete = self.response.get("status") == "incomplete"
        reason = (
            (self.response.get("incomplete_details") or {}).get("reason") if incomplete else None
        )
        has_calls = any(isinstance(p, ToolCallPart) for p in parts)
        stop: StopReason = "end_turn"
        if reason == "max_output_tokens":
            stop = "max_tokens"
        elif has_calls:
            stop = "tool_use"
        elif reason == "content_filter" or self.refused:
            stop = "refusal"
        return Completed(
            message=Message(role="assistant", parts=tuple(parts)),
            stop_reason=stop,
            usage=_usage(self.response.get("usage")),
        )

    def _reasoning(self, slot: _Item, final: dict[str, Any]) -> ReasoningPart:
        summary = as_list(final.get("summary"))
        text = "".join(slot.text) or "\n\n".join(
            s.get("text", "") for s in summary if isinstance(s, dict)
        )
        item: dict[str, Any] = {"type": "reasoning", "summary": summary}
        if final.get("encrypted_content"):
            item["encrypted_content"] = final["encrypted_content"]
        if final.get("content"):
            item["content"] = final["content"]
        return ReasoningPart(text=text, provider=self.kind, provider_data={"item": item})

    def _call(self, slot: _Item, final: dict[str, Any]) -> ToolCallPart:
        if slot.final_arguments is not None:
            raw = slot.final_arguments
        elif slot.done is not None and isinstance(slot.done.get("arguments"), str):
            raw = slot.done["arguments"]
        else:
            raw = "".join(slot.arguments)
        parsed, problem = parse_arguments(raw)
        call_id = final.get("call_id") or slot.added.get("call_id") or new_id("call_")
        name = final.get("name") or slot.added.get("name") or ""
        return ToolCallPart(
            id=str(call_id),
            name=str(name),
            input=parsed,
            input_error=problem,
            provider_data={"arguments": raw},
        )


def _message_text(item: dict[str, Any]) -> str:
    content = as_list(item.get("content"))
    return "".join(
        c.get("text", "")
        for c in content
        if isinstance(c, dict) and c.get("type") in ("output_text", "refusal")
    )


def _usage(data: Any) -> Usage:
    data = as_dict(data)
    return Usage(
        input_tokens=as_int(data.get("input_tokens")),
        output_tokens=as_int(data.get("output_tokens")),
        cached_tokens=as_int(as_dict(data.get("input_tokens_details")).get("cached_tokens")),
        reasoning_tokens=as_int(as_dict(data.get("output_tokens_details")).get("reasoning_tokens")),
    )
