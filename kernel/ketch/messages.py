"""The conversation: messages and their parts.

A history is an immutable tuple of messages; a turn returns a new one. Parts carry
everything a provider needs to replay a turn byte-exact (thinking signatures,
encrypted reasoning items, reasoning details), in ``provider_data``, opaque to the
kernel.
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator


def new_id(prefix: str = "") -> str:
    """A fresh random identifier (uuid4 hex), optionally prefixed."""
    return f"{prefix}{uuid.uuid4().hex}"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class TextPart(_Frozen):
    type: Literal["text"] = "text"
    text: str
    provider_data: dict[str, Any] | None = None  # e.g. a Gemini thoughtSignature, replayed as-is


# --- images ----------------------------------------------------------------------------

MAX_IMAGE_BYTES = 20 << 20  # one image in the history; providers downscale to their own limits
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


class ImagePart(_Frozen):
    """An image: its bytes (base64 in JSON, so the store keeps it like any content),
    media type and a name to mention it by. Capped at :data:`MAX_IMAGE_BYTES`."""

    type: Literal["image"] = "image"
    media_type: str
    data: bytes
    name: str = ""

    @field_validator("data", mode="before")
    @classmethod
    def _decode(cls, value: Any) -> Any:
        if isinstance(value, str):  # from JSON: base64
            return base64.b64decode(value, validate=True)
        return value

    @field_validator("data")
    @classmethod
    def _cap(cls, value: bytes) -> bytes:
        if len(value) > MAX_IMAGE_BYTES:
            raise ValueError(
                f"image of {len(value):,} bytes is over the {MAX_IMAGE_BYTES:,}-byte limit"
            )
        return value

    @field_validator("media_type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in IMAGE_TYPES:
            raise ValueError(f"unsupported image type {value!r} (PNG, JPEG, GIF or WebP)")
        return value

    @field_serializer("data", when_used="json")
    def _encode(self, value: bytes) -> str:
        return base64.b64encode(value).decode("ascii")


class ReasoningPart(_Frozen):
    """Model reasoning. ``signature``/``redacted``/``provider_data`` are replayed as-is."""

    type: Literal["reasoning"] = "reasoning"
    text: str = ""
    signature: str | None = None
    redacted: str | None = None  # reasoning the provider sent encrypted (replayed, never shown)
    provider: str | None = None  # which provider kind produced it (replay only there)
    provider_data: dict[str, Any] | None = None


class ToolCallPart(_Frozen):
    """One tool call the model proposed. ``input`` is the parsed JSON object."""

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    # Set when the provider's arguments were not valid JSON (e.g. cut by max tokens):
    # the call is never executed; the loop feeds this error back instead.
    input_error: str | None = None
    provider_data: dict[str, Any] | None = None

    def canonical_input(self) -> str:
        return json.dumps(self.input, sort_keys=True, separators=(",", ":"), default=str)


class ToolResultPart(_Frozen):
    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    name: str
    ok: bool
    output: str
    images: tuple[ImagePart, ...] = ()  # images the tool returned (read_file on a picture)


Part = Annotated[
    TextPart | ReasoningPart | ToolCallPart | ToolResultPart | ImagePart,
    Field(discriminator="type"),
]

Role = Literal["user", "assistant", "tool"]


class Message(_Frozen):
    """One message. ``role="tool"`` holds the results of one step's tool calls."""

    id: str = Field(default_factory=lambda: new_id("msg_"))
    role: Role
    parts: tuple[Part, ...] = ()
    # A note the loop added (cut-off notice, steer, synthetic result): not typed by the user.
    synthetic: bool = False
    provider_data: dict[str, Any] | None = None

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def tool_results(self) -> list[ToolResultPart]:
        return [p for p in self.parts if isinstance(p, ToolResultPart)]

    @property
    def images(self) -> list[ImagePart]:
        return [p for p in self.parts if isinstance(p, ImagePart)]

    @classmethod
    def user(cls, text: str, *, synthetic: bool = False) -> Message:
        return cls(role="user", parts=(TextPart(text=text),), synthetic=synthetic)

    @classmethod
    def assistant(cls, text: str) -> Message:
        return cls(role="assistant", parts=(TextPart(text=text),))


History = tuple[Message, ...]


def pending_tool_calls(history: History) -> list[ToolCallPart]:
    """Tool calls in the last assistant message that have no result yet."""
    answered = {r.tool_call_id for m in history for r in m.tool_results}
    for message in reversed(history):
        if message.role == "assistant":
            return [c for c in message.tool_calls if c.id not in answered]
    return []


class Usage(_Frozen):
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0  # of input_tokens, read from the prompt cache
    reasoning_tokens: int = 0
    cache_write_tokens: int = 0  # of input_tokens, written to the prompt cache (Anthropic)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )
