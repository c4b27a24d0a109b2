"""Gemini's SSE chunks assembled into provider events (gemini_stream.md §3-6).

* every ``data:`` payload is a whole ``GenerateContentResponse`` whose parts are deltas;
  an ``{"error": ...}`` payload is a mid-stream failure;
* text parts stream as text, ``thought: true`` parts as reasoning; consecutive parts of
  one kind are merged unless the earlier one carries a ``thoughtSignature`` (so every
  signature stays on the part it arrived on); an empty signature-only part is kept;
* each ``functionCall`` part is one whole call (several may come, in one chunk or many);
* ``usageMetadata`` is cumulative: the last one counts;
* there is no end marker: the stream is whole when the body ends after a chunk with a
  ``finishReason`` (or a prompt ``blockReason``); anything else is truncated.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ketch.api import (
    Completed,
    ErrorKind,
    Message,
    Notice,
    ProviderError,
    ProviderEvent,
    ReasoningDelta,
    ReasoningPart,
    StopReason,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolCallPart,
    Usage,
    new_id,
)
from ketch_provider_kit import as_dict, as_int, as_list, malformed

KIND = "gemini"

# finishReason -> what it means for the turn, and what the user is told.
REFUSALS: dict[str, str] = {
    "SAFETY": "the answer was blocked by Gemini's safety filters",
    "RECITATION": "the answer was stopped because it would recite training data",
    "LANGUAGE": "the answer was stopped: the language is not supported",
    "BLOCKLIST": "the answer was stopped: it contained forbidden terms",
    "PROHIBITED_CONTENT": "the answer was stopped: prohibited content",
    "SPII": "the answer was stopped: it contained sensitive personal information",
    "IMAGE_SAFETY": "the answer was blocked by Gemini's image safety filters",
    "IMAGE_PROHIBITED_CONTENT": "the answer was stopped: prohibited image content",
    "IMAGE_RECITATION": "the answer was stopped: image recitation",
}
RETRY = {
    "MALFORMED_FUNCTION_CALL": "the model produced a malformed function call",
    "UNEXPECTED_TOOL_CALL": "the model called a tool that was not offered",
}
OTHER = {
    "TOO_MANY_TOOL_CALLS": "the model made too many tool calls in a row",
    "IMAGE_OTHER": "the answer stopped for an image-related reason",
    "NO_IMAGE": "the model produced no image",
    "OTHER": "the answer stopped for an unspecified reason",
    "FINISH_REASON_UNSPECIFIED": "the answer stopped for an unspecified reason",
}
BLOCKED_PROMPT = {
    "SAFETY": "Gemini's safety filters",
    "BLOCKLIST": "forbidden terms",
    "PROHIBITED_CONTENT": "prohibited content",
    "IMAGE_SAFETY": "image safety filters",
    "OTHER": "an unspecified reason",
}


@dataclass
class _Piece:
    kind: str  # "text", "thought" or "call"
    text: list[str] = field(default_factory=list)
    signature: str | None = None
    call: ToolCallPart | None = None


@dataclass
class GeminiAssembler:
    provider: str
    secrets: tuple[str | None, ...] = ()
    pieces: list[_Piece] = field(default_factory=list)
    calls: int = 0
    usage: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None
    finish_message: str = ""
    block_reason: str | None = None
    response_id: str = ""

    def feed(self, chunk: Any) -> list[ProviderEvent]:
        if not isinstance(chunk, dict):
            raise malformed(
                self.provider,
                "the stream sent a payload that is not an object",
                json.dumps(chunk)[:80],
                self.secrets,
            )
        if "error" in chunk:
            from ketch_gemini.errors import gemini_error

            raise gemini_error(None, chunk, provider=self.provider, secrets=self.secrets)
        if isinstance(chunk.get("responseId"), str) and not self.response_id:
            self.response_id = re.sub(r"[^A-Za-z0-9_-]", "", chunk["responseId"])[:40]
        if isinstance(chunk.get("usageMetadata"), dict):
            self.usage = chunk["usageMetadata"]
        candidates = as_list(chunk.get("candidates"))
        feedback = as_dict(chunk.get("promptFeedback"))
        if feedback.get("blockReason") and not candidates:
            self.block_reason = str(feedback["blockReason"])
        events: list[ProviderEvent] = []
        for candidate in candidates[:1]:
            candidate = as_dict(candidate)
            for part in as_list(as_dict(candidate.get("content")).get("parts")):
                if isinstance(part, dict):
                    events += self._part(part)
            if candidate.get("finishReason"):
                self.finish_reason = str(candidate["finishReason"])
                self.finish_message = str(candidate.get("finishMessage") or "")
        return events

    def _part(self, part: dict[str, Any]) -> list[ProviderEvent]:
        signature = (
            part.get("thoughtSignature") if isinstance(part.get("thoughtSignature"), str) else None
        )
        call = part.get("functionCall")
        if isinstance(call, dict):
            return [self._call(call, signature)]
        text = part.get("text")
        if not isinstance(text, str):
            return []  # executableCode and the like: server tools ketch does not enable
        kind = "thought" if part.get("thought") is True else "text"
        last = self.pieces[-1] if self.pieces else None
        if last is not None and last.kind == kind and last.signature is None:
            last.text.append(text)
            last.signature = signature
        else:
            self.pieces.append(_Piece(kind=kind, text=[text], signature=signature))
        if not text:
            return []
        return [ReasoningDelta(text=text) if kind == "thought" else TextDelta(text=text)]

    def _call(self, call: dict[str, Any], signature: str | None) -> ToolCallDelta:
        name = call.get("name") if isinstance(call.get("name"), str) else ""
        given = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else None
        args = call.get("args")
        problem = (
            None
            if isinstance(args, dict) or args is None
            else f"arguments are not an object: {json.dumps(args)[:60]}"
        )
        # A call without an id gets one of ketch's own (from the response id, so a replay
        # of the same bytes gives the same ids); it is never sent back to Gemini.
        made_up = (
            f"call_{self.response_id}_{self.calls}" if self.response_id else new_id("call_")[:29]
        )
        data: dict[str, Any] = {"id": given is not None}
        if signature:
            data["thoughtSignature"] = signature
        part = ToolCallPart(
            id=given or made_up,
            name=name,
            input=args if isinstance(args, dict) else {},
            input_error=problem,
            provider_data=data,
        )
        self.pieces.append(_Piece(kind="call", call=part))
        index = self.calls
        self.calls += 1
        return ToolCallDelta(
            index=index, id=part.id, name=name, arguments=json.dumps(part.input, ensure_ascii=False)
        )

    # --- the end -------------------------------------------------------------------------

    def finish(self) -> list[ProviderEvent]:
        """At the end of the body: notices, then the Completed message; or raise."""
        if self.block_reason is not None:
            why = BLOCKED_PROMPT.get(self.block_reason, self.block_reason)
            raise ProviderError(
                ErrorKind.BAD_REQUEST,
                f"{self.provider}: Gemini refused the prompt ({self.block_reason}: {why}); nothing was generated. Rephrase the request.",
            )
        reason = self.finish_reason
        if reason is None:
            raise malformed(
                self.provider, "the stream ended without a finishReason (truncated response)"
            )
        detail = f": {self.finish_message}" if self.finish_message else ""
        if reason in RETRY:
            raise ProviderError(
                ErrorKind.SERVER,
                f"{self.provider}: {RETRY[reason]} ({reason}){detail}; asking again",
                retryable=True,
            )
        parts: list[Any] = []
        for piece in self.pieces:
            data = {"thoughtSignature": piece.signature} if piece.signature else None
            if piece.kind == "call" and piece.call is not None:
                parts.append(piece.call)
            elif piece.kind == "thought":
                parts.append(
                    ReasoningPart(
                        text="".join(piece.text), signature=piece.signature, provider=KIND
                    )
                )
            elif "".join(piece.text) or data:
                parts.append(TextPart(text="".join(piece.text), provider_data=data))
        has_calls = any(isinstance(p, ToolCallPart) for p in parts)
        notices: list[ProviderEvent] = []
        stop: StopReason
        if reason == "MAX_TOKENS":
            stop = "max_tokens"
        elif reason in REFUSALS:
            stop = "refusal"
            notices.append(
                Notice(
                    message=f"{self.provider}: {REFUSALS[reason]} (finishReason {reason}){detail}"
                )
            )
        elif reason != "STOP":
            stop = "tool_use" if has_calls else "other"
            notices.append(
                Notice(
                    message=f"{self.provider}: {OTHER.get(reason, 'the answer stopped')} (finishReason {reason}){detail}"
                )
            )
        else:
            stop = "tool_use" if has_calls else "end_turn"
        return [
            *notices,
            Completed(
                message=Message(role="assistant", parts=tuple(parts)),
                stop_reason=stop,
                usage=self._usage(),
            ),
        ]

    def _usage(self) -> Usage:
        meta = self.usage
        thoughts = as_int(meta.get("thoughtsTokenCount"))
        return Usage(
            input_tokens=as_int(meta.get("promptTokenCount"))
            + as_int(meta.get("toolUsePromptTokenCount")),
            output_tokens=as_int(meta.get("candidatesTokenCount"))
            + thoughts,  # thinking is billed as output
            cached_tokens=as_int(meta.get("cachedContentTokenCount")),
            reasoning_tokens=thoughts,
        )
