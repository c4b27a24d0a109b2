"""What a provider is, to the kernel: a kind that builds clients, and a client that streams.

A provider plugin registers a :class:`ProviderKind` through
``ketch_register_providers(register)``. The kernel resolves configuration and the API
key, asks the kind for a :class:`Provider`, and streams :data:`ProviderEvent` values
from it. Retries with backoff are the loop's job (one policy for all providers), so a
provider raises :class:`ProviderError` with ``retryable``/``retry_after`` filled in and
never sleeps itself, except for protocol-level fallbacks it owns (for example resending
once with ``max_completion_tokens`` instead of ``max_tokens``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from ketch.messages import History, Message, Usage


class Secret:
    """An API key. Its repr and str never show the value; only ``reveal()`` does."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


class ProviderConfig(BaseModel):
    """One ``[providers.NAME]`` table, after layering. Never holds the key itself."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    name: str
    kind: str
    base_url: str | None = None
    model: str | None = None
    context_window: int | None = None
    max_output_tokens: int | None = None
    api_key_env: str | None = None
    # Three deadlines, each a retryable ``network`` error naming itself (docs/providers.md):
    # connecting; no bytes at all (``timeout`` is the old name); no non-empty text,
    # reasoning or tool-call delta (a server that only sends keep-alives or empty deltas).
    connect_timeout: float = Field(10.0, gt=0)
    read_timeout: float = Field(
        240.0, gt=0, validation_alias=AliasChoices("read_timeout", "timeout")
    )
    progress_timeout: float = Field(480.0, gt=0)


class ToolSpec(BaseModel):
    """A tool as offered to the model: its name, description and JSON schema."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    input_schema: dict[str, Any]


class ProviderRequest(BaseModel):
    """Everything one provider call needs. The provider translates it to its wire format."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str
    system: str = ""
    messages: History = ()
    tools: tuple[ToolSpec, ...] = ()
    max_output_tokens: int | None = None
    options: dict[str, Any] = Field(default_factory=dict)


# --- what a provider yields while streaming -------------------------------------------


class TextDelta(BaseModel):
    kind: Literal["text"] = "text"
    text: str


class ReasoningDelta(BaseModel):
    kind: Literal["reasoning"] = "reasoning"
    text: str


class ToolCallDelta(BaseModel):
    """A fragment of a tool call as it streams (display only; the loop acts on Completed)."""

    kind: Literal["tool_call_delta"] = "tool_call_delta"
    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


class Notice(BaseModel):
    """Something the user should know that is not an error (a model without tool
    support, a prompt that filled the window). The loop shows it as a ``notice`` event."""

    kind: Literal["notice"] = "notice"
    message: str


StopReason = Literal[
    "end_turn", "tool_use", "max_tokens", "refusal", "context_overflow", "pause", "other"
]


class Completed(BaseModel):
    """The stream ended cleanly. ``message`` is the whole assistant message to keep."""

    kind: Literal["completed"] = "completed"
    message: Message
    stop_reason: StopReason = "end_turn"
    usage: Usage = Field(default_factory=Usage)


ProviderEvent = TextDelta | ReasoningDelta | ToolCallDelta | Notice | Completed


class ErrorKind(StrEnum):
    AUTH = "auth"
    PERMISSION = "permission"
    NOT_FOUND = "not_found"
    RATE_LIMIT = "rate_limit"
    QUOTA = "quota"
    OVERLOADED = "overloaded"
    CONTEXT_LENGTH = "context_length"
    BAD_REQUEST = "bad_request"
    SERVER = "server"
    NETWORK = "network"
    TIMEOUT = "timeout"
    MALFORMED_STREAM = "malformed_stream"
    CONFIG = "config"


class ProviderError(Exception):
    """A classified provider failure. ``message`` is one line a person can act on."""

    def __init__(
        self,
        kind: ErrorKind | str,
        message: str,
        *,
        retryable: bool = False,
        status: int | None = None,
        retry_after: float | None = None,
        request_id: str | None = None,
        context_limit: int | None = None,
        context_used: int | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = ErrorKind(kind)
        self.message = message
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        self.request_id = request_id
        self.context_limit = context_limit
        self.context_used = context_used

    def __repr__(self) -> str:
        return f"ProviderError({self.kind.value!r}, {self.message!r}, retryable={self.retryable})"


@dataclass(frozen=True)
class ModelInfo:
    """What is known about one model: from a provider's model list, or a model catalog
    (``ketch_model_info``). None means unknown, never "no"; ``source`` says where the
    facts come from (and their date). A catalog may answer with a subclass that knows
    more (prices)."""

    id: str
    context_window: int | None = None
    owned_by: str | None = None
    max_output_tokens: int | None = None
    tools: bool | None = None
    images: bool | None = None
    source: str | None = None


@runtime_checkable
class Provider(Protocol):
    """A configured client for one provider. Built per session by its ProviderKind."""

    name: str
    kind: str
    model: str

    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        """Stream one response. Yields deltas, then exactly one Completed, or raises
        ProviderError. A stream that ends without its protocol's clean end marker is
        a ``malformed_stream`` error, never a Completed. Cancelling the consuming task
        must close the connection promptly."""
        ...

    async def list_models(self) -> list[ModelInfo]: ...

    async def context_window(self) -> int | None:
        """The model's context length as the provider reports it, or None."""
        ...

    async def aclose(self) -> None: ...


@dataclass
class ProviderKind:
    """A kind of provider (``openai``, ``anthropic``, ...), registered by a plugin.

    ``create`` builds a client from the layered config and the resolved key (None when
    neither the environment nor the keyring has one; a kind that needs a key should
    raise ``ProviderError(ErrorKind.AUTH, ...)`` naming both ways to set one).
    ``env_key``/``env_base_url`` are the ecosystem's usual variables for this kind.
    ``detect``, when given, looks for a local server and returns a config for it.
    ``config_model`` validates the kind's own config keys (a wrong type is a one-line
    error naming the key, before anything is sent). ``setup_hint`` is the kind's own line for a person with nothing configured
    (``export FOO_API_KEY=...; ketch --provider foo --model M``); ``local_hint`` names
    what ``detect`` looks for ("a local Ollama (localhost:11434)").
    """

    kind: str
    create: Any  # Callable[[ProviderConfig, Secret | None], Provider]
    description: str = ""
    env_key: str | None = None
    env_base_url: str | None = None
    default_base_url: str | None = None
    default_model: str | None = None
    needs_key: bool = True
    detect: Any = None  # Callable[[], Awaitable[ProviderConfig | None]] | None
    setup_hint: str = ""
    local_hint: str = ""
    # The kind's own ``[providers.NAME]`` keys, validated before ``create`` is called
    # (a subclass of ProviderConfig); None: the common keys only.
    config_model: Any = None
    plugin: str = field(default="", compare=False)
