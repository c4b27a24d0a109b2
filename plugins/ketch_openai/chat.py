"""OpenAI Chat Completions: the request body, and the SSE stream assembled into events.

Wire rules (as the recorded chat-completions streams show them):

* ``[DONE]`` is the only clean end; EOF without it is a truncated stream.
* tool-call fragments are keyed by ``index``; ``id``/``name`` come once; arguments are
  concatenated and parsed once at the end (invalid JSON becomes ``input_error``).
* usage comes in a ``choices: []`` chunk (or on the finish chunk) and replaces any
  earlier value; an ``error`` key in any chunk is a mid-stream error.
* reasoning arrives as ``reasoning_content``, ``reasoning`` (+ ``reasoning_details``),
  or inline ``<think>`` tags, and is echoed back on tool-call turns.
"""

from __future__ import annotations

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
from ketch_openai.base import OFFICIAL_HOST, OpenAIBase, extra
from ketch_provider_kit import (
    DONE,
    OPENAI_IMAGES,
    ContentReader,
    HttpError,
    as_dict,
    as_int,
    classify,
    fit_image,
    image_data_uri,
    malformed,
    parse_arguments,
    split_late_close_tag,
    sse_json,
)
from ketch_provider_kit.wire import per_message

log = logging.getLogger("ketch.providers.openai")

# Models whose chat template pre-fills "<think>", so the stream carries only "</think>".
_PREFILLED_THINK = re.compile(r"(^|[/:_-])(deepseek-r1|r1-distill|qwq)|-r1($|[:_-])", re.IGNORECASE)


class ChatProvider(OpenAIBase):
    kind = "openai"
    endpoint = "chat/completions"

    def __init__(self, config: Any, key: Any) -> None:
        super().__init__(config, key)
        official = urlsplit(self.base_url).hostname == OFFICIAL_HOST
        # The official API wants max_completion_tokens (o-series and gpt-5 reject max_tokens);
        # most compatible servers only know max_tokens. A 400 switches either way, once.
        self._token_field = extra(self.config, "max_tokens_field") or (
            "max_completion_tokens" if official else "max_tokens"
        )
        self._stream_options = True

    # --- request ---------------------------------------------------------------------

    def body(self, request: ProviderRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": chat_messages(request, self.kind),
            "stream": True,
        }
        if self._stream_options:
            body["stream_options"] = {"include_usage": True}
        if request.tools:
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
            body["tool_choice"] = "auto"
        if request.max_output_tokens:
            body[self._token_field] = request.max_output_tokens
        for key in ("temperature", "top_p", "reasoning_effort", "parallel_tool_calls", "seed"):
            value = extra(self.config, key)
            if value is not None:
                body[key] = value
        body.update(extra(self.config, "extra_body") or {})
        body.update(request.options.get("extra_body") or {})
        return body

    def _fallback(self, error: HttpError, body: dict[str, Any]) -> bool:
        """Protocol fallbacks this provider owns: resend once with the other token-limit
        field, or without ``stream_options``, when the server rejects them (400/422)."""
        if (
            error.status not in (400, 422)
            or error.kind != ErrorKind.BAD_REQUEST
            or error.detail is None
        ):
            return False
        said = f"{error.detail.param or ''} {error.detail.message}".lower()
        for old, new in (
            ("max_tokens", "max_completion_tokens"),
            ("max_completion_tokens", "max_tokens"),
        ):
            if (
                old in body
                and old in said
                and (
                    new in said
                    or "unsupported" in said
                    or "unrecognized" in said
                    or "extra" in said
                )
            ):
                log.info("%s: the server rejected %s; sending %s instead", self.name, old, new)
                body[new] = body.pop(old)
                self._token_field = new
                return True
        if "stream_options" in body and "stream_options" in said:
            log.info("%s: the server rejected stream_options; streaming without usage", self.name)
            del body["stream_options"]
            self._stream_options = False
            return True
        return False

    # --- streaming -------------------------------------------------------------------

    async def decode(self, response: Any) -> AsyncIterator[ProviderEvent]:
        """Events from a 200 response: SSE, or one JSON completion from a server that
        ignored ``stream: true``."""
        assembler = ChatAssembler(
            kind=self.kind,
            provider=self.name,
            starts_in_reasoning=self._prefilled_think(),
            secrets=self.secrets,
        )
        content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if content_type == "application/json":
            raw = await response.aread()
            try:
                data = json.loads(raw or b"{}")
            except ValueError:
                raise malformed(
                    self.name,
                    "the server answered with broken JSON",
                    raw[:80].decode("utf-8", "replace"),
                    self.secrets,
                ) from None
            for event in assembler.whole(data):
                yield event
            return
        async for _, chunk in sse_json(response, provider=self.name, secrets=self.secrets):
            if chunk == DONE:
                for event in assembler.flush():
                    yield event
                yield assembler.finish()
                return
            for event in assembler.feed(chunk):
                yield event
        raise malformed(self.name, "the stream ended before [DONE] (truncated response)")

    def _prefilled_think(self) -> bool:
        configured = extra(self.config, "think_prefill")
        if configured is not None:
            return bool(configured)
        return bool(_PREFILLED_THINK.search(self.model))


# --- history -> chat messages --------------------------------------------------------------


def chat_messages(request: ProviderRequest, kind: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages += _wire.flat(tuple(request.messages), kind)
    return messages


@per_message
def _wire(message: Message, kind: str) -> list[dict[str, Any]]:
    """One message in chat-completions form (one or more wire messages); cached."""
    if message.role == "user":
        return [{"role": "user", "content": _user_content(message)}]
    if message.role == "assistant":
        return [_assistant(message, kind)]
    out: list[dict[str, Any]] = []
    shown: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            out.append({"role": "tool", "tool_call_id": part.tool_call_id, "content": part.output})
            if part.images:
                shown.append(
                    {
                        "type": "text",
                        "text": f"(the image(s) returned by {part.name}, call {part.tool_call_id})",
                    }
                )
                shown += [_image(i) for i in part.images]
    if shown:  # a tool message takes text only: the images follow in a user message
        out.append({"role": "user", "content": shown})
    return out


def _image(image: ImagePart) -> dict[str, Any]:
    fitted = fit_image(image, OPENAI_IMAGES)
    if isinstance(fitted, TextPart):
        return {"type": "text", "text": fitted.text}
    return {"type": "image_url", "image_url": {"url": image_data_uri(fitted)}}


def _user_content(message: Message) -> str | list[dict[str, Any]]:
    """A plain string, or the content-part array once the message carries an image."""
    if not message.images:
        return "\n\n".join(p.text for p in message.parts if isinstance(p, TextPart))
    content: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart) and part.text:
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            content.append(_image(part))
    return content


def _assistant(message: Message, kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant"}
    calls = message.tool_calls
    if message.text or not calls:
        out["content"] = message.text
    if not calls:
        return out
    out["tool_calls"] = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": tool_arguments(c)},
        }
        for c in calls
    ]
    # Reasoning goes back on tool-call turns (DeepSeek thinking mode requires it; OpenRouter
    # needs reasoning_details to continue a tool cycle). Inline <think> text is not echoed.
    for part in message.parts:
        if not isinstance(part, ReasoningPart) or part.provider != kind:
            continue
        data = part.provider_data or {}
        if data.get("reasoning_details"):
            out["reasoning_details"] = data["reasoning_details"]
        elif data.get("field") in ("reasoning_content", "reasoning") and part.text:
            out[data["field"]] = part.text
    return out


def tool_arguments(call: ToolCallPart) -> str:
    """The arguments string to replay: the model's own bytes when they parsed, else ``{}``."""
    if call.input_error:
        return "{}"
    raw = (call.provider_data or {}).get("arguments")
    return (
        raw if isinstance(raw, str) and raw.strip() else json.dumps(call.input, ensure_ascii=False)
    )


# --- stream -> events ------------------------------------------------------------------------


@dataclass
class _Call:
    index: int
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)


@dataclass
class ChatAssembler:
    """Turns parsed chunks into provider events and, at ``[DONE]``, the Completed message."""

    kind: str
    provider: str
    starts_in_reasoning: bool = False
    secrets: tuple[str | None, ...] = ()
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    reasoning_field: str | None = None
    details: dict[int, dict[str, Any]] = field(default_factory=dict)
    calls: dict[int, _Call] = field(default_factory=dict)
    finish_reason: str | None = None
    refused: bool = False
    usage: Usage | None = None
    think_source: bool = False
    content: ContentReader = field(init=False)

    def __post_init__(self) -> None:
        self.content = ContentReader(
            self.text, self.reasoning, starts_in_reasoning=self.starts_in_reasoning
        )

    def feed(self, chunk: Any) -> list[ProviderEvent]:
        if not isinstance(chunk, dict):
            return []
        if chunk.get("error"):
            raise classify(
                None, chunk, provider=self.provider, secrets=self.secrets, mid_stream=True
            )
        if isinstance(chunk.get("usage"), dict):
            self.usage = _usage(chunk["usage"])
        events: list[ProviderEvent] = []
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or choice.get("message") or {}
            if isinstance(delta, dict):
                events += self._delta(delta)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        return events

    def _delta(self, delta: dict[str, Any]) -> list[ProviderEvent]:
        events: list[ProviderEvent] = []
        for name in ("reasoning_content", "reasoning"):
            value = delta.get(name)
            if isinstance(value, str) and value:
                self.reasoning_field = self.reasoning_field or name
                if name == self.reasoning_field:
                    self.reasoning.append(value)
                    events.append(ReasoningDelta(text=value))
        for detail in delta.get("reasoning_details") or []:
            if isinstance(detail, dict):
                self._merge_detail(detail)
        content = delta.get("content")
        if isinstance(content, str) and content:
            # A server that sent a reasoning field parses reasoning itself: content is answer.
            events += self.content.feed(content, server_separates=self.reasoning_field is not None)
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            self.refused = True
            self.text.append(refusal)
            events.append(TextDelta(text=refusal))
        for position, item in enumerate(delta.get("tool_calls") or []):
            if isinstance(item, dict):
                event = self._tool_fragment(position, item)
                if event is not None:
                    events.append(event)
        return events

    def _merge_detail(self, detail: dict[str, Any]) -> None:
        """OpenRouter streams ``reasoning_details`` as fragments per ``index``: text fields
        are concatenated, the rest (type, format, signature, id) kept as last seen."""
        index = detail.get("index", 0) if isinstance(detail.get("index", 0), int) else 0
        merged = self.details.setdefault(index, {})
        for key, value in detail.items():
            if value is None:
                continue
            if key in ("text", "summary", "data") and isinstance(value, str):
                merged[key] = merged.get(key, "") + value
            else:
                merged[key] = value

    def _tool_fragment(self, position: int, item: dict[str, Any]) -> ToolCallDelta | None:
        index = item.get("index")
        if not isinstance(index, int):
            # No index: a new id starts a new call; otherwise it continues the last one.
            known = {c.id for c in self.calls.values()}
            if item.get("id") and item["id"] not in known:
                index = max(self.calls, default=-1) + 1
            else:
                index = max(self.calls, default=position)
        elif (
            index in self.calls
            and item.get("id")
            and self.calls[index].id not in (None, item["id"])
        ):
            index = max(self.calls) + 1  # a server that numbers every whole call 0
        call = self.calls.setdefault(index, _Call(index=index))
        function = as_dict(item.get("function"))
        new_id = (
            item.get("id")
            if isinstance(item.get("id"), str) and item.get("id") and call.id is None
            else None
        )
        new_name = (
            function.get("name")
            if isinstance(function.get("name"), str) and function.get("name") and call.name is None
            else None
        )
        if new_id:
            call.id = new_id
        if new_name:
            call.name = new_name
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # a few servers send an object; keep its JSON text
            arguments = json.dumps(arguments, ensure_ascii=False)
        fragment = arguments if isinstance(arguments, str) else ""
        if fragment:
            call.arguments.append(fragment)
        if not (new_id or new_name or fragment):
            return None
        return ToolCallDelta(index=index, id=new_id, name=new_name, arguments=fragment)

    def flush(self) -> list[ProviderEvent]:
        return self.content.flush()

    def finish(self) -> Completed:
        """The clean end ([DONE]): the whole assistant message."""
        self.flush()
        text = "".join(self.text)
        reasoning = "".join(self.reasoning)
        splitter = self.content.splitter
        self.think_source = self.content.tagged
        if splitter is not None and not self.reasoning_field:
            if not self.starts_in_reasoning and not self.think_source:
                late = split_late_close_tag(text)
                if (
                    late is not None
                ):  # "</think>" with no "<think>": what came before it was reasoning
                    reasoning, text = late
                    self.think_source = True
            elif (
                self.starts_in_reasoning
                and not splitter.closed
                and not text
                and self.finish_reason != "length"
            ):
                # Assumed a pre-filled <think>, but no </think> ever came: it was the answer.
                text, reasoning, self.think_source = reasoning, "", False
        parts: list[Any] = []
        if reasoning or self.details:
            data: dict[str, Any]
            if self.details:
                data = {"reasoning_details": [self.details[i] for i in sorted(self.details)]}
                if self.reasoning_field:
                    data["field"] = self.reasoning_field
            elif self.think_source:
                data = {"source": "think_tag"}
            else:
                data = {"field": self.reasoning_field}
            parts.append(ReasoningPart(text=reasoning, provider=self.kind, provider_data=data))
        if text:
            parts.append(TextPart(text=text))
        calls = [self._call_part(self.calls[i]) for i in sorted(self.calls)]
        parts += calls
        return Completed(
            message=Message(role="assistant", parts=tuple(parts)),
            stop_reason=self._stop_reason(bool(calls)),
            usage=self.usage or Usage(),
        )

    def _stop_reason(self, has_calls: bool) -> StopReason:
        # Decide on the calls present, not on finish_reason (servers disagree about it).
        if self.finish_reason == "length":
            return "max_tokens"
        if has_calls:
            return "tool_use"
        if self.finish_reason == "content_filter" or self.refused:
            return "refusal"
        return "end_turn"

    def _call_part(self, call: _Call) -> ToolCallPart:
        raw = "".join(call.arguments)
        call_id = call.id or new_id("call_")
        name = call.name or ""
        parsed, problem = parse_arguments(raw)
        return ToolCallPart(
            id=call_id,
            name=name,
            input=parsed,
            input_error=problem,
            provider_data={"arguments": raw},
        )

    def whole(self, data: Any) -> list[ProviderEvent]:
        """A non-streamed ``chat.completion`` (the server ignored ``stream: true``)."""
        if not isinstance(data, dict):
            raise malformed(self.provider, "the server answered with JSON that is not a completion")
        if data.get("error"):
            raise classify(
                None, data, provider=self.provider, secrets=self.secrets, mid_stream=True
            )
        events = self.feed(data)
        return [*events, *self.flush(), self.finish()]


def _usage(data: dict[str, Any]) -> Usage:
    return Usage(
        input_tokens=as_int(data.get("prompt_tokens")),
        output_tokens=as_int(data.get("completion_tokens")),
        cached_tokens=as_int(as_dict(data.get("prompt_tokens_details")).get("cached_tokens")),
        reasoning_tokens=as_int(
            as_dict(data.get("completion_tokens_details")).get("reasoning_tokens")
        ),
    )
