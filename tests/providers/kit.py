"""Helpers the provider tests share: building providers through their plugins' own
registration, the standard request, splitting byte streams, collecting events."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

import ketch_anthropic
import ketch_gemini
import ketch_ollama
import ketch_openai
from ketch.messages import ToolCallPart
from ketch.providers import (
    Completed,
    ProviderConfig,
    ProviderError,
    ProviderKind,
    ProviderRequest,
    Secret,
    ToolSpec,
)

from .loopback import LoopbackServer, Reply
from .recordings import CANARY, MODEL, OLLAMA_SHOW, SYSTEM, WEATHER_SCHEMA, history

PATHS = {
    "openai": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "ollama": "/api/chat",
    "gemini": f"/v1beta/models/{MODEL['gemini']}:streamGenerateContent",
}
ENV = {
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
    "ollama": ("OLLAMA_API_KEY", "OLLAMA_HOST"),
    "gemini": ("GEMINI_API_KEY", "GEMINI_BASE_URL"),
}


def provider_kinds() -> dict[str, ProviderKind]:
    """The kinds exactly as the provider plugins register them."""
    kinds: dict[str, ProviderKind] = {}
    for plugin in (ketch_openai, ketch_anthropic, ketch_ollama, ketch_gemini):
        plugin.ketch_register_providers(register=lambda kind: kinds.__setitem__(kind.kind, kind))
    return kinds


def base_url(kind: str, server_url: str) -> str:
    return f"{server_url}/v1" if kind.startswith("openai") else server_url


def make(kind: str, server_url: str, key: str | None = CANARY, **config: Any) -> Any:
    settings: dict[str, Any] = {
        "name": kind,
        "kind": kind,
        "base_url": base_url(kind, server_url),
        "model": MODEL[kind],
    }
    if kind == "openai":
        settings["context_window"] = 100_000  # known, so no /models probe before the request
    settings.update(config)
    return provider_kinds()[kind].create(ProviderConfig(**settings), Secret(key) if key else None)


def request(kind: str, **changes: Any) -> ProviderRequest:
    tools = (
        ToolSpec(
            name="weather",
            description="Get weather information for a location",
            input_schema=WEATHER_SCHEMA,
        ),
    )
    data: dict[str, Any] = {
        "model": MODEL[kind],
        "system": SYSTEM,
        "messages": history(kind),
        "tools": tools,
        "max_output_tokens": 1000,
    }
    data.update(changes)
    return ProviderRequest(**data)


def serve_ollama_show(server: LoopbackServer) -> None:
    server.default("/api/show", Reply.json(200, OLLAMA_SHOW), method="POST")


def awkward(data: bytes, step: int = 7) -> list[bytes]:
    """Split at fixed odd offsets, inside every multi-byte character and inside every
    line break pair: the places a naive reader gets wrong."""
    cuts = set(range(3, len(data), step))
    for i, byte in enumerate(data):
        if byte >= 0xC0:
            cuts.add(i + 1)
        if data[i : i + 2] in (b"\n\n", b"\r\n", b"\r\r"):
            cuts.add(i + 1)
    return split_at(data, cuts)


def inside_characters(data: bytes) -> list[bytes]:
    """Split only inside multi-byte characters (few writes, each its own TCP segment)."""
    return split_at(data, {i + 1 for i, byte in enumerate(data) if byte >= 0xC0})


def split_at(data: bytes, cuts: set[int]) -> list[bytes]:
    points = [0, *sorted(c for c in cuts if 0 < c < len(data)), len(data)]
    return [data[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]


def normalize(events: list[Any]) -> list[Any]:
    """Events with the random message id fixed, so they compare by content."""
    return [
        e.model_copy(update={"message": e.message.model_copy(update={"id": "msg_x"})})
        if isinstance(e, Completed)
        else e
        for e in events
    ]


async def collect(provider: Any, req: ProviderRequest) -> tuple[list[Any], ProviderError | None]:
    events: list[Any] = []
    try:
        async for event in provider.stream(req):
            events.append(event)
    except ProviderError as error:
        return normalize(events), error
    finally:
        await provider.aclose()
    return normalize(events), None


def run(provider: Any, req: ProviderRequest) -> tuple[list[Any], ProviderError | None]:
    return asyncio.run(collect(provider, req))


class ChunkStream(httpx.AsyncByteStream):
    """A response body delivered in exactly these chunks (for re-chunking properties)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> Any:
        for chunk in self.chunks:
            yield chunk


async def decode_chunks(
    kind: str, chunks: list[bytes], content_type: str
) -> tuple[list[Any], ProviderError | None]:
    """Run one provider's stream decoder over a body split into ``chunks``."""
    provider = make(kind, "http://127.0.0.1:9")
    response = httpx.Response(
        200, headers={"content-type": content_type}, stream=ChunkStream(chunks)
    )
    events: list[Any] = []
    try:
        async for event in provider.decode(response):
            events.append(event)
    except ProviderError as error:
        return normalize(events), error
    return normalize(events), None


def cut_call(events: list[Any]) -> ToolCallPart:
    completed = events[-1]
    assert isinstance(completed, Completed)
    calls = completed.message.tool_calls
    assert len(calls) == 1
    return calls[0]
