"""Behaviour particular to each protocol: fallbacks a provider owns, reasoning in <think>
tags, missing keys, model lists and context windows, Ollama's capabilities and window,
local-server detection."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ketch.messages import Message
from ketch.providers import Completed, ErrorKind, Notice, ProviderConfig, ReasoningDelta, TextDelta
from ketch_ollama.provider import detect_ollama
from ketch_openai.detect import detect_lmstudio

from .kit import make, provider_kinds, request, run
from .loopback import LoopbackServer, Reply, free_port
from .recordings import CANARY, OLLAMA_SHOW, _oa, _oa_usage, recordings, sse

CHAT = "/v1/chat/completions"


def plain_reply(kind: str = "openai") -> Reply:
    rec = recordings(kind)
    return Reply(chunks=[rec["streams"]["plain"]], content_type=rec["content_type"])


def simple(kind: str, **changes: Any) -> Any:
    return request(
        kind, **{"messages": (Message.user("hi"),), "tools": (), "system": "", **changes}
    )


# --- OpenAI chat -------------------------------------------------------------------------------


def test_rejected_max_tokens_is_resent_once_as_max_completion_tokens(
    server: LoopbackServer,
) -> None:
    rejection = {
        "error": {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            "type": "invalid_request_error",
            "param": "max_tokens",
            "code": "unsupported_parameter",
        }
    }
    server.queue(CHAT, Reply.json(400, rejection), plain_reply(), plain_reply())
    provider = make("openai", server.url)

    async def twice() -> list[Any]:
        first = [e async for e in provider.stream(simple("openai"))]
        second = [e async for e in provider.stream(simple("openai"))]
        await provider.aclose()
        return [first[-1], second[-1]]

    results = asyncio.run(twice())
    assert all(isinstance(r, Completed) for r in results)
    bodies = server.posts(CHAT)
    assert [("max_tokens" in b, "max_completion_tokens" in b) for b in bodies] == [
        (True, False),
        (False, True),
        (False, True),
    ]
    assert bodies[1]["max_completion_tokens"] == 1000


def test_rejected_stream_options_is_resent_without_it(server: LoopbackServer) -> None:
    rejection = {
        "object": "error",
        "message": "[{'type': 'extra_forbidden', 'loc': ('body', 'stream_options'), 'msg': 'Extra inputs are not permitted'}]",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
    server.queue(CHAT, Reply.json(400, rejection), plain_reply())
    events, error = run(make("openai", server.url), simple("openai"))
    assert error is None and events[-1].message.text.startswith("I'm unable")
    first, second = server.posts(CHAT)
    assert "stream_options" in first and "stream_options" not in second


def test_the_official_api_gets_max_completion_tokens_and_needs_a_key() -> None:
    provider = provider_kinds()["openai"].create(
        ProviderConfig(name="openai", kind="openai", model="gpt-5"), None
    )
    assert "max_completion_tokens" in provider.body(simple("openai"))
    events, error = run(provider, simple("openai"))
    assert events == [] and error is not None and error.kind == ErrorKind.AUTH
    assert "OPENAI_API_KEY" in error.message and "ketch auth set openai" in error.message


def test_anthropic_without_a_key_says_both_ways() -> None:
    provider = provider_kinds()["anthropic"].create(
        ProviderConfig(
            name="work", kind="anthropic", model="claude-sonnet-4-5", api_key_env="WORK_KEY"
        ),
        None,
    )
    events, error = run(provider, simple("anthropic"))
    assert error is not None and error.kind == ErrorKind.AUTH
    assert "WORK_KEY" in error.message and "ketch auth set work" in error.message


def test_a_local_server_without_a_key_gets_no_authorization_header(server: LoopbackServer) -> None:
    server.queue(CHAT, plain_reply())
    events, error = run(make("openai", server.url, key=None), simple("openai"))
    assert error is None
    assert "authorization" not in server.requests[-1].headers


def test_keys_go_in_the_right_headers(server: LoopbackServer) -> None:
    server.queue(CHAT, plain_reply())
    server.queue("/v1/messages", plain_reply("anthropic"))
    run(make("openai", server.url), simple("openai"))
    run(make("anthropic", server.url), simple("anthropic"))
    openai, anthropic = server.requests
    assert openai.headers["authorization"] == f"Bearer {CANARY}"
    assert (
        anthropic.headers["x-api-key"] == CANARY
        and anthropic.headers["anthropic-version"] == "2023-06-01"
    )
    assert "authorization" not in anthropic.headers


def test_a_server_that_ignores_stream_true_still_works(server: LoopbackServer) -> None:
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "weather", "arguments": '{"location":"Rome"}'},
                        },
                        {
                            "id": "call_b",
                            "type": "function",
                            "function": {"name": "weather", "arguments": '{"location":"Oslo"}'},
                        },
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14},
    }
    server.queue(CHAT, Reply.json(200, completion))
    events, error = run(make("openai", server.url), simple("openai"))
    assert error is None
    final = events[-1]
    assert [(c.id, c.input) for c in final.message.tool_calls] == [
        ("call_a", {"location": "Rome"}),
        ("call_b", {"location": "Oslo"}),
    ]
    assert final.stop_reason == "tool_use" and final.usage.output_tokens == 9


def test_whole_calls_numbered_alike_or_without_index_stay_apart(server: LoopbackServer) -> None:
    calls = [
        {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "a", "arguments": '{"x":1}'},
        },
        {
            "index": 0,
            "id": "call_2",
            "type": "function",
            "function": {"name": "b", "arguments": '{"y":2}'},
        },
        {"id": "call_3", "type": "function", "function": {"name": "c", "arguments": "{}"}},
    ]
    server.queue(
        CHAT,
        Reply(chunks=[sse(*[_oa({"tool_calls": [c]}) for c in calls], _oa({}, "stop"), "[DONE]")]),
    )
    events, error = run(make("openai", server.url), simple("openai"))
    assert [(c.id, c.name, c.input) for c in events[-1].message.tool_calls] == [
        ("call_1", "a", {"x": 1}),
        ("call_2", "b", {"y": 2}),
        ("call_3", "c", {}),
    ]
    assert events[-1].stop_reason == "tool_use"  # decided on the calls, not on finish_reason "stop"


@pytest.mark.parametrize("kind", ["openai", "openai-responses", "anthropic", "ollama"])
def test_a_connection_dropped_mid_body_is_a_retryable_network_error(
    server: LoopbackServer, kind: str
) -> None:
    from .kit import PATHS

    rec = recordings(kind)
    data = rec["streams"]["plain"]
    server.queue(
        PATHS[kind],
        Reply(chunks=[data[: len(data) // 2]], content_type=rec["content_type"], drop=True),
    )
    server.default("/api/show", Reply.json(200, OLLAMA_SHOW), method="POST")
    events, error = run(make(kind, server.url), request(kind))
    assert error is not None and error.kind == ErrorKind.NETWORK and error.retryable
    assert "broke mid-response" in error.message
    assert not any(isinstance(e, Completed) for e in events)


def _think_stream(pieces: list[str]) -> Reply:
    return Reply(
        chunks=[
            sse(*[_oa({"content": p}) for p in pieces], _oa({}, "stop"), _oa_usage(3, 4), "[DONE]")
        ]
    )


def test_a_prefilled_think_stream_with_only_the_closing_tag_is_reasoning(
    server: LoopbackServer,
) -> None:
    server.queue(CHAT, _think_stream(["The user", " greets.\n</th", "ink>\n\nHi", " there"]))
    events, error = run(make("openai", server.url, model="deepseek-r1:14b"), simple("openai"))
    assert error is None
    assert events[:-1] == [
        ReasoningDelta(text="The user"),
        ReasoningDelta(text=" greets.\n"),
        TextDelta(text="Hi"),
        TextDelta(text=" there"),
    ]
    parts = events[-1].message.parts
    assert parts[0].text == "The user greets.\n" and parts[0].provider_data == {
        "source": "think_tag"
    }
    assert events[-1].message.text == "Hi there"


def test_inline_think_tags_become_reasoning_and_are_not_echoed(server: LoopbackServer) -> None:
    server.queue(CHAT, _think_stream(["<thi", "nk>plan", "</think>", "Done."]))
    events, error = run(make("openai", server.url), simple("openai"))
    assert events[:-1] == [ReasoningDelta(text="plan"), TextDelta(text="Done.")]
    message = events[-1].message
    server.queue(CHAT, plain_reply())
    run(
        make("openai", server.url),
        simple("openai", messages=(Message.user("hi"), message, Message.user("more"))),
    )
    assert server.posts(CHAT)[-1]["messages"][1] == {"role": "assistant", "content": "Done."}


def test_a_late_closing_tag_moves_the_text_before_it_into_reasoning(server: LoopbackServer) -> None:
    server.queue(CHAT, _think_stream(["thinking out loud", "</think>", "The answer."]))
    events, error = run(make("openai", server.url, model="some-model"), simple("openai"))
    assert error is None
    message = events[-1].message
    assert message.text == "The answer."
    assert message.parts[0].text == "thinking out loud"


def test_openai_lists_models_with_windows_and_learns_an_unknown_window(
    server: LoopbackServer,
) -> None:
    models = {
        "object": "list",
        "data": [
            {"id": "gpt-4o", "owned_by": "openai"},
            {"id": "local-coder", "owned_by": "vllm", "max_model_len": 8192},
        ],
    }
    server.default("/v1/models", Reply.json(200, models))
    listed = asyncio.run(make("openai", server.url).list_models())
    assert [(m.id, m.context_window, m.owned_by) for m in listed] == [
        ("gpt-4o", 128_000, "openai"),
        ("local-coder", 8192, "vllm"),
    ]
    server.queue(CHAT, plain_reply(), plain_reply())
    provider = provider_kinds()["openai"].create(
        ProviderConfig(name="openai", kind="openai", base_url=server.url, model="local-coder"), None
    )

    async def go() -> int | None:
        async for _ in provider.stream(simple("openai", model="local-coder")):
            pass
        async for _ in provider.stream(simple("openai", model="local-coder")):
            pass
        return await provider.context_window()

    assert asyncio.run(go()) == 8192
    assert provider.config.context_window == 8192  # what the loop budgets with
    assert [r.path for r in server.requests if r.method == "GET"].count(
        "/v1/models"
    ) == 2  # list + one probe


# --- OpenAI Responses -------------------------------------------------------------------------


def test_responses_drops_reasoning_summaries_an_organisation_may_not_use(
    server: LoopbackServer,
) -> None:
    refusal = {
        "error": {
            "message": "Your organization must be verified to generate reasoning summaries.",
            "type": "invalid_request_error",
            "param": "reasoning.summary",
            "code": "unsupported_value",
        }
    }
    server.queue("/v1/responses", Reply.json(400, refusal), plain_reply("openai-responses"))
    events, error = run(make("openai-responses", server.url), simple("openai-responses"))
    assert error is None
    first, second = server.posts("/v1/responses")
    assert first["reasoning"] == {"summary": "auto"} and "reasoning" not in second
    assert second["include"] == ["reasoning.encrypted_content"] and second["store"] is False


def test_responses_failed_event_is_classified(server: LoopbackServer) -> None:
    failed = sse(
        (
            "response.failed",
            {
                "type": "response.failed",
                "response": {
                    "id": "r",
                    "status": "failed",
                    "error": {"code": "rate_limit_exceeded", "message": "slow down"},
                },
            },
        )
    )
    server.queue("/v1/responses", Reply(chunks=[failed]))
    events, error = run(make("openai-responses", server.url), simple("openai-responses"))
    assert error is not None and error.kind == ErrorKind.RATE_LIMIT and error.retryable


# --- Anthropic ------------------------------------------------------------------------------------


def test_anthropic_clamps_max_tokens_and_keeps_the_thinking_budget_below_it() -> None:
    kind = provider_kinds()["anthropic"]
    provider = kind.create(
        ProviderConfig(name="a", kind="anthropic", model="claude-sonnet-4-5"), None
    )
    assert (
        provider.body(simple("anthropic", model="claude-sonnet-4-5", max_output_tokens=200_000))[
            "max_tokens"
        ]
        == 64_000
    )
    assert (
        provider.body(simple("anthropic", model="claude-3-5-haiku-latest", max_output_tokens=None))[
            "max_tokens"
        ]
        == 8_192
    )
    thinking = kind.create(
        ProviderConfig(
            name="a", kind="anthropic", model="claude-sonnet-4-5", thinking_budget=20_000
        ),
        None,
    )
    body = thinking.body(simple("anthropic", model="claude-sonnet-4-5", max_output_tokens=4096))
    assert (
        body["thinking"] == {"type": "enabled", "budget_tokens": 20_000}
        and body["max_tokens"] > 20_000
    )
    assert provider.config.context_window == 200_000


def test_anthropic_context_window_exceeded_stop_reason_is_an_overflow(
    server: LoopbackServer,
) -> None:
    stream = sse(
        (
            "message_start",
            {
                "type": "message_start",
                "message": {"usage": {"input_tokens": 10, "output_tokens": 1}},
            },
        ),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "model_context_window_exceeded"},
                "usage": {"output_tokens": 3},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    )
    server.queue("/v1/messages", Reply(chunks=[stream]))
    events, error = run(make("anthropic", server.url), simple("anthropic"))
    assert error is not None and error.kind == ErrorKind.CONTEXT_LENGTH


def test_anthropic_lists_models(server: LoopbackServer) -> None:
    server.default(
        "/v1/models",
        Reply.json(
            200,
            {
                "data": [
                    {
                        "type": "model",
                        "id": "claude-sonnet-4-5-20250929",
                        "display_name": "Claude Sonnet 4.5",
                    }
                ],
                "has_more": False,
            },
        ),
    )
    models = asyncio.run(make("anthropic", server.url).list_models())
    assert [(m.id, m.context_window) for m in models] == [("claude-sonnet-4-5-20250929", 200_000)]
    assert (
        server.requests[-1].target == "/v1/models?limit=1000"
        and server.requests[-1].headers["x-api-key"] == CANARY
    )


# --- Ollama ------------------------------------------------------------------------------------------


def test_ollama_model_not_pulled_says_how_to_get_it(server: LoopbackServer) -> None:
    server.default(
        "/api/show",
        Reply.json(404, {"error": 'model "m" not found, try pulling it first'}),
        method="POST",
    )
    events, error = run(make("ollama", server.url), simple("ollama"))
    assert (
        error is not None and error.kind == ErrorKind.NOT_FOUND and "ollama pull m" in error.message
    )
    assert server.posts("/api/chat") == []


def test_ollama_window_from_config_or_modelfile_and_no_tools_without_the_capability(
    server: LoopbackServer,
) -> None:
    show = {**OLLAMA_SHOW, "parameters": "num_ctx 8192", "capabilities": ["completion"]}
    server.default("/api/show", Reply.json(200, show), method="POST")
    server.queue("/api/chat", plain_reply("ollama"), plain_reply("ollama"))
    provider = make("ollama", server.url)
    events, _ = run(provider, request("ollama"))
    body = server.posts("/api/chat")[0]
    assert body["options"]["num_ctx"] == 8192 and "tools" not in body and "think" not in body
    # The user is told, once, through the stream (the loop shows it as a notice event).
    notices = [e for e in events if isinstance(e, Notice)]
    assert len(notices) == 1 and "does not support tools" in notices[0].message
    assert provider.config.context_window == 8192  # the loop now budgets with the real window
    run(
        make(
            "ollama", server.url, context_window=65536, options={"num_ctx": 1, "temperature": 0.1}
        ),
        request("ollama"),
    )
    assert server.posts("/api/chat")[1]["options"] == {
        "num_ctx": 65536,
        "num_predict": 1000,
        "temperature": 0.1,
    }


def test_ollama_gpt_oss_thinks_in_levels(server: LoopbackServer) -> None:
    server.default("/api/show", Reply.json(200, OLLAMA_SHOW), method="POST")
    server.queue("/api/chat", plain_reply("ollama"))
    run(make("ollama", server.url, model="gpt-oss:20b"), simple("ollama", model="gpt-oss:20b"))
    assert server.posts("/api/chat")[0]["think"] == "medium"


def test_ollama_lists_models_with_trained_windows(server: LoopbackServer) -> None:
    server.default(
        "/api/tags",
        Reply.json(200, {"models": [{"name": "qwen3:8b"}, {"name": "llama3.2:latest"}]}),
    )
    server.default(
        "/api/show",
        lambda seen: Reply.json(200, OLLAMA_SHOW if seen.json["model"] == "qwen3:8b" else {}),
        method="POST",
    )
    models = asyncio.run(make("ollama", server.url).list_models())
    assert [(m.id, m.context_window) for m in models] == [
        ("llama3.2:latest", None),
        ("qwen3:8b", 131072),
    ]


def test_ollama_tool_call_quirks(server: LoopbackServer) -> None:
    from .recordings import _metrics, _ol, ndjson

    calls = [
        {"function": {"name": "a", "arguments": '{"x": 1}'}},
        {"function": {"name": "b", "arguments": {"name": "b", "arguments": {"y": 2}}}},
        {"function": {"name": "c", "arguments": "not json"}},
    ]
    server.default("/api/show", Reply.json(200, OLLAMA_SHOW), method="POST")
    server.queue(
        "/api/chat",
        Reply(
            chunks=[ndjson(_ol("", tool_calls=calls), _ol("", done=True, **_metrics(5, 5)))],
            content_type="application/x-ndjson",
        ),
    )
    events, error = run(make("ollama", server.url), simple("ollama"))
    final = events[-1]
    a, b, c = final.message.tool_calls
    assert (a.input, b.input, c.input) == ({"x": 1}, {"y": 2}, {})
    assert a.input_error is None and b.input_error is None and c.input_error
    assert len({a.id, b.id, c.id}) == 3 and final.stop_reason == "tool_use"


# --- first run ------------------------------------------------------------------------------------------


def test_detect_finds_ollama_and_lmstudio_and_nothing_when_nothing_listens(
    server: LoopbackServer,
) -> None:
    server.default("/api/version", Reply.json(200, {"version": "0.12.3"}))
    server.default(
        "/api/tags", Reply.json(200, {"models": [{"name": "qwen3:8b"}, {"name": "llama3.2"}]})
    )
    server.default(
        "/v1/models",
        Reply.json(
            200,
            {
                "data": [
                    {"id": "text-embedding-nomic-embed-text-v1.5"},
                    {"id": "qwen2.5-coder-7b-instruct"},
                ]
            },
        ),
    )
    found = asyncio.run(detect_ollama(server.url))
    assert (found.name, found.kind, found.base_url, found.model) == (
        "ollama",
        "ollama",
        server.url,
        "qwen3:8b",
    )
    studio = asyncio.run(detect_lmstudio(f"{server.url}/v1"))
    assert (studio.name, studio.kind, studio.model) == (
        "lmstudio",
        "openai",
        "qwen2.5-coder-7b-instruct",
    )
    nothing = f"http://127.0.0.1:{free_port()}"
    assert asyncio.run(detect_ollama(nothing)) is None
    assert asyncio.run(detect_lmstudio(f"{nothing}/v1")) is None


def test_detect_says_no_to_a_server_that_is_not_ollama(server: LoopbackServer) -> None:
    assert asyncio.run(detect_ollama(server.url)) is None  # /api/version answers 404
    kinds = provider_kinds()
    assert kinds["ollama"].detect is not None and kinds["openai"].detect is not None
    assert not kinds["ollama"].needs_key


@pytest.mark.parametrize("kind", ["openai", "openai-responses", "anthropic", "ollama"])
def test_providers_have_the_attributes_the_kernel_reads(kind: str) -> None:
    provider = make(kind, "http://127.0.0.1:9")
    assert (provider.name, provider.kind, provider.model) == (
        kind,
        kind,
        recordings(kind) and provider.model,
    )
    assert isinstance(provider.config, ProviderConfig)


# --- SSE details httpx-sse must get right ----------------------------------------------------


def test_a_json_chunk_spread_over_several_data_lines_is_joined(server: LoopbackServer) -> None:
    stream = (
        b'data: {"choices":[{"index":0,\r\ndata: "delta":{"content":"multi"}}]}\r\n\r\n'
        b'data:{"choices":[{"index":0,"delta":{"content":"-line"},"finish_reason":"stop"}]}\n\n'
        b": keep-alive\n\n"
        b"data: [DONE]\n\n"
    )
    server.queue(CHAT, Reply(chunks=[stream]))
    events, error = run(make("openai", server.url), simple("openai"))
    assert error is None and events[:-1] == [TextDelta(text="multi"), TextDelta(text="-line")]


def test_anthropic_dispatches_on_the_data_type_and_ignores_unknown_events(
    server: LoopbackServer,
) -> None:
    rec = recordings("anthropic")["streams"]["plain"].decode()
    # A proxy that drops or rewrites event: lines, plus events and deltas ketch does not know.
    rewritten = rec.replace("event: content_block_delta", "event: message").replace(
        "event: ping\n", ""
    )
    extra = (
        'event: agent.thinking\ndata: {"type":"agent.thinking","x":1}\n\n'
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}\n\n'
    )
    head, sep, tail = rewritten.partition("event: content_block_stop")
    server.queue("/v1/messages", Reply(chunks=[(head + extra + sep + tail).encode()]))
    events, error = run(make("anthropic", server.url), simple("anthropic"))
    assert error is None
    assert events == recordings("anthropic")["events"]["plain"][:-1] + [events[-1]]
    assert events[-1].message.text == "Hello there!"


def test_responses_without_output_item_added_events_still_assembles(server: LoopbackServer) -> None:
    stream = sse(
        (
            "response.output_text.delta",
            {"type": "response.output_text.delta", "output_index": 0, "delta": "Hi"},
        ),
        (
            "response.function_call_arguments.delta",
            {
                "type": "response.function_call_arguments.delta",
                "output_index": 1,
                "delta": '{"a":1}',
            },
        ),
        (
            "response.output_item.done",
            {
                "type": "response.output_item.done",
                "output_index": 1,
                "item": {
                    "type": "function_call",
                    "call_id": "call_z",
                    "name": "f",
                    "arguments": '{"a":1}',
                },
            },
        ),
        (
            "response.completed",
            {
                "type": "response.completed",
                "response": {
                    "status": "completed",
                    "usage": {"input_tokens": 1, "output_tokens": 2},
                },
            },
        ),
    )
    server.queue("/v1/responses", Reply(chunks=[stream]))
    events, error = run(make("openai-responses", server.url), simple("openai-responses"))
    assert error is None
    message = events[-1].message
    assert message.text == "Hi" and [(c.id, c.name, c.input) for c in message.tool_calls] == [
        ("call_z", "f", {"a": 1})
    ]


def test_a_non_streamed_answer_with_broken_json_is_a_malformed_stream(
    server: LoopbackServer,
) -> None:
    server.queue(CHAT, Reply(chunks=[b'{"choices": [ broken'], content_type="application/json"))
    events, error = run(make("openai", server.url), simple("openai"))
    assert error is not None and error.kind == ErrorKind.MALFORMED_STREAM and error.retryable


def test_an_overflow_that_mentions_max_tokens_is_not_mistaken_for_a_field_rejection(
    server: LoopbackServer,
) -> None:
    vllm = {
        "object": "error",
        "message": "'max_tokens' or 'max_completion_tokens' is too large: 8192. This model's maximum context length is 8192 tokens and your request has 1210 input tokens",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
    server.queue(CHAT, Reply.json(400, vllm))
    events, error = run(make("openai", server.url), simple("openai"))
    assert (
        error is not None and error.kind == ErrorKind.CONTEXT_LENGTH and error.context_limit == 8192
    )
    assert len(server.posts(CHAT)) == 1
