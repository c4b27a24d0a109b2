"""Round trips: what a provider streamed (reasoning, signatures, encrypted items, tool
calls) is sent back on the next request exactly as each wire format requires."""

from __future__ import annotations

from typing import Any

import pytest

from ketch.messages import Message, ToolResultPart
from ketch.providers import Completed

from .kit import PATHS, make, request, run, serve_ollama_show
from .loopback import LoopbackServer, Reply
from .recordings import recordings


def round_trip(
    server: LoopbackServer, kind: str, scenario: str, results: list[tuple[str, str]]
) -> Any:
    """Stream ``scenario``, answer its calls with ``results``, return the next body sent."""
    rec = recordings(kind)
    server.queue(
        PATHS[kind], Reply(chunks=[rec["streams"][scenario]], content_type=rec["content_type"])
    )
    server.queue(
        PATHS[kind], Reply(chunks=[rec["streams"]["plain"]], content_type=rec["content_type"])
    )
    serve_ollama_show(server)
    question = Message.user("What's the weather in Florence, Italy?")
    events, error = run(
        make(kind, server.url), request(kind, messages=(question,), tools=(), system="")
    )
    assert error is None
    completed = events[-1]
    assert isinstance(completed, Completed)
    calls = completed.message.tool_calls
    answers = Message(
        role="tool",
        parts=tuple(
            ToolResultPart(tool_call_id=c.id, name=c.name, ok=True, output=out)
            for c, (_, out) in zip(calls, results, strict=True)
        ),
    )
    _, error = run(
        make(kind, server.url),
        request(kind, messages=(question, completed.message, answers), tools=(), system=""),
    )
    assert error is None
    return server.posts(PATHS[kind])[-1]


def test_openrouter_reasoning_details_are_echoed_with_their_signature(
    server: LoopbackServer,
) -> None:
    body = round_trip(server, "openai", "reasoning", [("weather", "40 C")])
    assert body["messages"][1:] == [
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "toolu_vrtx_01NRAptSJVJEik354SSeQZAs",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"location": "Florence, Italy"}'},
                }
            ],
            "reasoning_details": [
                {
                    "type": "reasoning.text",
                    "text": "The user is asking for weather information for Florence, Italy.",
                    "format": "anthropic-claude-v1",
                    "index": 0,
                    "signature": "EqkDCkgICxACGAIqQPS7",
                }
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_vrtx_01NRAptSJVJEik354SSeQZAs", "content": "40 C"},
    ]


def test_reasoning_content_is_echoed_on_the_tool_call_turn(server: LoopbackServer) -> None:
    body = round_trip(server, "openai", "tool_split", [("weather", "40 C")])
    assert body["messages"][1] == {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "1wNpqrejg1FCTjf6xq8JRCGKgWZO74AL",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"location":"Florence, Italy"}'},
            }
        ],
        "reasoning_content": "We need to call function 'weather' with location",
    }


def test_responses_replays_the_encrypted_item_from_output_item_done(server: LoopbackServer) -> None:
    body = round_trip(server, "openai-responses", "reasoning", [("weather", "40 C")])
    summary = "**Getting weather for Florence**\n\nThe user wants the weather."
    assert body["store"] is False
    assert body["input"][1:] == [
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": summary}],
            "encrypted_content": "gAAAAABpsv-jnw-8k8joGbz9prEL-DONE",
        },
        {
            "type": "function_call",
            "call_id": "call_XjLMCgd17m2E4EOiIVoc4J91",
            "name": "weather",
            "arguments": '{"location":"Florence, Italy"}',
        },
        {
            "type": "function_call_output",
            "call_id": "call_XjLMCgd17m2E4EOiIVoc4J91",
            "output": "40 C",
        },
    ]


def test_anthropic_thinking_is_replayed_byte_exact_with_the_tool_results(
    server: LoopbackServer,
) -> None:
    body = round_trip(server, "anthropic", "reasoning", [("weather", "40 C")])
    assert body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": "The user is asking for weather information for Florence, Italy. I should call the weather tool.\n",
                    "signature": "EtYDCkYICxgCKkAVHEWRYo6RYAQ==",
                },
                {
                    "type": "redacted_thinking",
                    "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw",
                },
                {
                    "type": "tool_use",
                    "id": "toolu_01Js4AMfx5qpTLhwTusnvT68",
                    "name": "weather",
                    "input": {"location": "Florence, Italy"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01Js4AMfx5qpTLhwTusnvT68",
                    "content": [{"type": "text", "text": "40 C"}],
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        },
    ]


def test_anthropic_parallel_results_go_in_one_user_message(server: LoopbackServer) -> None:
    body = round_trip(server, "anthropic", "parallel", [("add", "5"), ("multiply", "6")])
    assert body["messages"][2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01UYxUYC2zRPY8wiutnF48eP",
                "content": [{"type": "text", "text": "5"}],
            },
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01VaRx1jpWCvPhi7L4kywAcd",
                "content": [{"type": "text", "text": "6"}],
                "cache_control": {"type": "ephemeral"},
            },
        ],
    }


def test_ollama_replays_thinking_and_object_arguments(server: LoopbackServer) -> None:
    body = round_trip(
        server,
        "ollama",
        "parallel",
        [("read_file_content", "class A {}"), ("read_file_content", "class B {}")],
    )
    assert body["messages"][1:] == [
        {
            "role": "assistant",
            "content": "",
            "thinking": "The user wants me to read two Java files. Let me make both function calls now.",
            "tool_calls": [
                {
                    "id": "call_trmym6vj",
                    "type": "function",
                    "function": {
                        "index": 0,
                        "name": "read_file_content",
                        "arguments": {"file_name": "src/OllamaApiClient.java"},
                    },
                },
                {
                    "id": "call_24957ol8",
                    "type": "function",
                    "function": {
                        "index": 1,
                        "name": "read_file_content",
                        "arguments": {"file_name": "src/OpenAiApiClient.java"},
                    },
                },
            ],
        },
        {
            "role": "tool",
            "content": "class A {}",
            "tool_name": "read_file_content",
            "tool_call_id": "call_trmym6vj",
        },
        {
            "role": "tool",
            "content": "class B {}",
            "tool_name": "read_file_content",
            "tool_call_id": "call_24957ol8",
        },
    ]


@pytest.mark.parametrize("kind", ["openai", "openai-responses", "anthropic", "ollama"])
def test_reasoning_from_another_provider_kind_is_never_sent(
    server: LoopbackServer, kind: str
) -> None:
    rec = recordings(kind)
    server.queue(
        PATHS[kind], Reply(chunks=[rec["streams"]["plain"]], content_type=rec["content_type"])
    )
    serve_ollama_show(server)
    run(make(kind, server.url), request(kind))
    sent = str(server.posts(PATHS[kind])[0])
    assert "someone else's thoughts" not in sent and "zzz" not in sent
