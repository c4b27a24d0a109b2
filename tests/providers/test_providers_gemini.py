"""Gemini's own behaviour, through the real loopback server: the function-call round trip
with its thoughtSignature replayed on exactly the part that carried it, parallel calls,
thought summaries, stop and block reasons, Google's error details, the model list and
window, schema conversion, and the thinking fallback."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ketch.messages import Message, ToolCallPart, ToolResultPart
from ketch.providers import Completed, ErrorKind, Notice, ProviderConfig, Secret, ToolSpec
from ketch.testing import Harness

from .kit import PATHS, make, provider_kinds, request, run
from .loopback import LoopbackServer, Reply
from .recordings import CANARY, recordings
from .recordings_gemini import ANSWER, CALL_ID, SIGNATURE, _chunk, _usage, stream

PATH = PATHS["gemini"]


def reply(*payloads: str) -> Reply:
    return Reply(chunks=[stream(*payloads)], content_type="text/event-stream")


def simple(**changes: Any) -> Any:
    return request(
        "gemini", **{"messages": (Message.user("hi"),), "tools": (), "system": "", **changes}
    )


def round_trip(
    server: LoopbackServer, scenario: str, outputs: list[str], model: str = "gemini-2.5-flash"
) -> tuple[Completed, dict[str, Any]]:
    """Stream ``scenario``, answer each call with ``outputs``, return (its message, the next body)."""
    path = f"/v1beta/models/{model}:streamGenerateContent"
    server.queue(path, Reply(chunks=[recordings("gemini")["streams"][scenario]]), reply(*ANSWER))
    question = Message.user("What is the capital of the user country? Call the tool")
    events, error = run(
        make("gemini", server.url, model=model), simple(model=model, messages=(question,))
    )
    assert error is None, error
    completed = events[-1]
    results = Message(
        role="tool",
        parts=tuple(
            ToolResultPart(tool_call_id=c.id, name=c.name, ok=True, output=o)
            for c, o in zip(completed.message.tool_calls, outputs, strict=True)
        ),
    )
    events, error = run(
        make("gemini", server.url, model=model),
        simple(model=model, messages=(question, completed.message, results)),
    )
    assert error is None and events[-1].message.text == "The capital of Mexico is Mexico City."
    return completed, server.posts(path)[-1]


def test_a_function_call_and_its_response_round_trip_with_the_signature_replayed_exactly(
    server: LoopbackServer,
) -> None:
    completed, body = round_trip(server, "tool_split", ["Mexico"], model="gemini-3-pro-preview")
    (call,) = completed.message.tool_calls
    assert (call.id, call.name, call.input) == (CALL_ID, "get_country", {})
    assert body["contents"] == [
        {
            "role": "user",
            "parts": [{"text": "What is the capital of the user country? Call the tool"}],
        },
        # the signature, byte for byte, on the part it came on; no id: the API sent none
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "get_country", "args": {}}, "thoughtSignature": SIGNATURE}
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_country", "response": {"output": "Mexico"}}}
            ],
        },
    ]


def test_two_parallel_calls_replay_the_signature_on_the_first_only_and_answer_both_in_order(
    server: LoopbackServer,
) -> None:
    completed, body = round_trip(server, "parallel", ["print('a')", "print('b')"])
    assert [(c.id, c.input) for c in completed.message.tool_calls] == [
        ("c1", {"path": "a.py"}),
        ("c2", {"path": "b.py"}),
    ]
    assert body["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"name": "read_file", "args": {"path": "a.py"}, "id": "c1"},
                    "thoughtSignature": "Es8FCswF",
                },
                {"functionCall": {"name": "read_file", "args": {"path": "b.py"}, "id": "c2"}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "read_file",
                        "response": {"output": "print('a')"},
                        "id": "c1",
                    }
                },
                {
                    "functionResponse": {
                        "name": "read_file",
                        "response": {"output": "print('b')"},
                        "id": "c2",
                    }
                },
            ],
        },
    ]


def test_thought_summaries_are_reasoning_and_a_signed_answer_keeps_its_signature(
    server: LoopbackServer,
) -> None:
    server.queue(PATH, Reply(chunks=[recordings("gemini")["streams"]["reasoning"]]), reply(*ANSWER))
    events, error = run(make("gemini", server.url), simple())
    assert error is None
    message = events[-1].message
    assert message.parts[0].type == "reasoning" and message.parts[0].text.startswith(
        "**Clarifying User Goals**"
    )
    run(
        make("gemini", server.url),
        simple(messages=(Message.user("hi"), message, Message.user("thanks"))),
    )
    model_turn = server.posts(PATH)[-1]["contents"][1]
    # unsigned thought summaries are not sent back; the signed answer part is, exactly
    assert model_turn == {
        "role": "model",
        "parts": [
            {
                "text": message.parts[1].text,
                "thoughtSignature": "CiIB0e2Kb6Syj1a961EfbWv4W5C8RgAA/hGleV9Vqm/dH8k=",
            },
            {"text": " guide."},
        ],
    }


def test_a_safety_finish_is_reported_through_the_loop(
    tmp_path: Path, server: LoopbackServer
) -> None:
    blocked = _chunk(
        [{"text": "Here is how"}],
        finish="SAFETY",
        usage=_usage(12, 3),
        safetyRatings=[
            {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}
        ],
    )
    server.queue(PATH, reply(blocked))
    h = Harness.create(tmp_path, bundled=False)
    events: list[Any] = []
    provider = make("gemini", server.url)

    async def go() -> Any:
        session = h.kernel.new_session(provider=provider, listeners=[events.append])
        try:
            return await h.kernel.run_turn(session, "hi")
        finally:
            await provider.aclose()

    end = asyncio.run(go())
    notices = [e.message for e in events if e.type == "notice"]
    assert any("safety filters" in n and "SAFETY" in n for n in notices), notices
    assert end.stop_reason == "end_turn" and end.text == "Here is how"
    assert len(server.posts(PATH)) == 1  # a refusal is not retried


def test_a_blocked_prompt_is_a_clear_error(server: LoopbackServer) -> None:
    feedback = '{"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"}]}, "usageMetadata": {"promptTokenCount": 12, "totalTokenCount": 12}, "modelVersion": "gemini-2.5-flash"}'
    server.queue(PATH, reply(feedback))
    events, error = run(make("gemini", server.url), simple())
    assert (
        events == []
        and error is not None
        and error.kind == ErrorKind.BAD_REQUEST
        and not error.retryable
    )
    assert "refused the prompt (SAFETY" in error.message


@pytest.mark.parametrize(
    ("reason", "stop"),
    [
        ("MAX_TOKENS", "max_tokens"),
        ("RECITATION", "refusal"),
        ("TOO_MANY_TOOL_CALLS", "other"),
        ("OTHER", "other"),
    ],
)
def test_every_finish_reason_maps_to_a_stop(server: LoopbackServer, reason: str, stop: str) -> None:
    server.queue(PATH, reply(_chunk([{"text": "partial"}], finish=reason, usage=_usage(5, 2))))
    events, error = run(make("gemini", server.url), simple())
    assert error is None and events[-1].stop_reason == stop
    notices = [e for e in events if isinstance(e, Notice)]
    assert (reason in notices[0].message) if stop != "max_tokens" else not notices


def test_a_malformed_function_call_is_a_retryable_error(
    tmp_path: Path, server: LoopbackServer
) -> None:
    malformed = _chunk(
        [],
        finish="MALFORMED_FUNCTION_CALL",
        usage=_usage(5, 0),
        finishMessage="Malformed function call: print(default_api.read_file(path=",
    )
    server.queue(PATH, reply(malformed), Reply(chunks=[recordings("gemini")["streams"]["plain"]]))
    events, error = run(make("gemini", server.url), simple())
    assert (
        error is not None
        and error.kind == ErrorKind.SERVER
        and error.retryable
        and "malformed function call" in error.message
    )


def test_a_daily_quota_or_a_long_wait_is_not_retried(server: LoopbackServer) -> None:
    daily = {
        "error": {
            "code": 429,
            "message": "You exceeded your current quota.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [
                        {"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}
                    ],
                },
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "51820.6s"},
            ],
        }
    }
    server.queue(PATH, Reply.json(429, daily))
    _, error = run(make("gemini", server.url), simple())
    assert (
        error is not None
        and error.kind == ErrorKind.QUOTA
        and not error.retryable
        and "daily quota" in error.message
    )
    minute = {
        "error": {
            "code": 429,
            "message": "Quota exceeded. Please retry in 900.2ms.",
            "status": "RESOURCE_EXHAUSTED",
        }
    }
    server.queue(PATH, Reply.json(429, minute))
    _, error = run(make("gemini", server.url), simple())
    assert (
        error is not None
        and error.kind == ErrorKind.RATE_LIMIT
        and error.retryable
        and error.retry_after == pytest.approx(0.9002)
    )


def test_403_and_a_midstream_429_are_classified(server: LoopbackServer) -> None:
    server.queue(
        PATH,
        Reply.json(
            403,
            {
                "error": {
                    "code": 403,
                    "message": "Your API key was reported as leaked. Please use another API key.",
                    "status": "PERMISSION_DENIED",
                }
            },
        ),
    )
    _, error = run(make("gemini", server.url), simple())
    assert (
        error is not None
        and error.kind == ErrorKind.PERMISSION
        and "reported as leaked" in error.message
    )
    late = '{"error": {"code": 429, "message": "Resource exhausted.", "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3.5s"}]}}'
    server.queue(PATH, reply(_chunk([{"text": "Hel"}]), late))
    events, error = run(make("gemini", server.url), simple())
    assert [e.text for e in events] == ["Hel"]
    assert (
        error is not None
        and error.kind == ErrorKind.RATE_LIMIT
        and error.retry_after == 3.5
        and "mid-stream" in error.message
    )


def test_models_list_chat_models_and_the_window_comes_from_input_token_limit(
    server: LoopbackServer,
) -> None:
    page1 = {
        "models": [
            {
                "name": "models/gemini-2.5-pro",
                "inputTokenLimit": 1048576,
                "outputTokenLimit": 65536,
                "supportedGenerationMethods": ["generateContent", "countTokens"],
            },
            {
                "name": "models/text-embedding-004",
                "inputTokenLimit": 2048,
                "supportedGenerationMethods": ["embedContent"],
            },
        ],
        "nextPageToken": "p2",
    }
    page2 = {
        "models": [
            {
                "name": "models/gemini-3-pro-preview",
                "inputTokenLimit": 1000000,
                "outputTokenLimit": 64000,
                "supportedGenerationMethods": ["generateContent"],
            }
        ]
    }
    server.default(
        "/v1beta/models",
        lambda seen: Reply.json(200, page2 if "pageToken=p2" in seen.target else page1),
    )
    server.default("/v1beta/models/gemini-3-pro-preview", Reply.json(200, page2["models"][0]))
    provider = make("gemini", server.url, model="gemini-3-pro-preview")
    models = asyncio.run(provider.list_models())
    assert [(m.id, m.context_window, m.max_output_tokens) for m in models] == [
        ("gemini-2.5-pro", 1048576, 65536),
        ("gemini-3-pro-preview", 1000000, 64000),
    ]
    assert asyncio.run(provider.context_window()) == 1000000
    assert all(
        r.headers["x-goog-api-key"] == CANARY and CANARY not in r.target for r in server.requests
    )


def test_tool_schemas_are_converted_or_refused_with_a_notice(server: LoopbackServer) -> None:
    nested = {
        "type": "object",
        "$defs": {
            "Edit": {
                "type": "object",
                "properties": {"old": {"type": "string"}, "kind": {"const": "replace"}},
                "title": "Edit",
            }
        },
        "properties": {"edits": {"type": "array", "items": {"$ref": "#/$defs/Edit"}}},
        "required": ["edits"],
        "$schema": "https://json-schema.org/draft/2020-12/schema",
    }
    recursive = {
        "type": "object",
        "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}},
        "properties": {"root": {"$ref": "#/$defs/Node"}},
    }
    tools = (
        ToolSpec(name="edit", description="edit", input_schema=nested),
        ToolSpec(name="tree", description="tree", input_schema=recursive),
    )
    server.queue(PATH, Reply(chunks=[recordings("gemini")["streams"]["plain"]]))
    events, error = run(make("gemini", server.url), simple(tools=tools))
    assert error is None
    (declared,) = server.posts(PATH)[0]["tools"][0]["functionDeclarations"]
    assert declared["parametersJsonSchema"] == {
        "type": "object",
        "properties": {
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"old": {"type": "string"}, "kind": {"enum": ["replace"]}},
                    "title": "Edit",
                },
            }
        },
        "required": ["edits"],
    }
    assert any(
        isinstance(e, Notice)
        and "tool tree is not offered" in e.message
        and "refers to itself" in e.message
        for e in events
    )


def test_a_model_that_rejects_thinking_settings_is_asked_again_without_them(
    server: LoopbackServer,
) -> None:
    rejection = {
        "error": {
            "code": 400,
            "message": "Invalid JSON payload received. Unknown name \"includeThoughts\" at 'generation_config.thinking_config': Cannot find field.",
            "status": "INVALID_ARGUMENT",
        }
    }
    server.queue(
        PATH, Reply.json(400, rejection), Reply(chunks=[recordings("gemini")["streams"]["plain"]])
    )
    events, error = run(make("gemini", server.url), simple())
    assert error is None and isinstance(events[-1], Completed)
    first, second = server.posts(PATH)
    assert first["generationConfig"]["thinkingConfig"] == {
        "includeThoughts": True
    } and "thinkingConfig" not in second.get("generationConfig", {})


def test_thinking_budget_and_level_together_are_a_config_error() -> None:
    provider = make("gemini", "http://127.0.0.1:9", thinking_budget=1024, thinking_level="high")
    _, error = run(provider, simple())
    assert error is not None and error.kind == ErrorKind.CONFIG and "not both" in error.message


def test_unsigned_calls_get_the_documented_skip_value_on_gemini_3_only(
    server: LoopbackServer,
) -> None:
    foreign = Message(
        role="assistant",
        parts=(
            ToolCallPart(id="toolu_1", name="weather", input={"location": "Rome"}),
            ToolCallPart(id="toolu_2", name="weather", input={}),
        ),
    )
    results = Message(
        role="tool",
        parts=(
            ToolResultPart(tool_call_id="toolu_1", name="weather", ok=True, output="20 C"),
            ToolResultPart(tool_call_id="toolu_2", name="weather", ok=True, output="?"),
        ),
    )
    history = (Message.user("weather?"), foreign, results)
    for model, expected in (
        ("gemini-3-pro-preview", "skip_thought_signature_validator"),
        ("gemini-2.5-flash", None),
    ):
        provider = make("gemini", "http://127.0.0.1:9", model=model)
        parts = provider.body(simple(model=model, messages=history))["contents"][1]["parts"]
        assert parts[0].get("thoughtSignature") == expected and "thoughtSignature" not in parts[1]
        assert (
            parts[0]["functionCall"]["id"] == "toolu_1"
        )  # ids Gemini never saw are ketch's own: sent


def test_google_api_key_is_the_fallback_and_a_key_is_never_in_the_url(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", CANARY)
    server.queue(PATH, Reply(chunks=[recordings("gemini")["streams"]["plain"]]))
    kind = provider_kinds()["gemini"]
    provider = kind.create(
        ProviderConfig(name="gemini", kind="gemini", base_url=server.url, model="gemini-2.5-flash"),
        None,
    )
    _, error = run(provider, simple())
    assert error is None and server.requests[-1].headers["x-goog-api-key"] == CANARY
    monkeypatch.delenv("GOOGLE_API_KEY")
    explicit = kind.create(
        ProviderConfig(name="gemini", kind="gemini", base_url=server.url, model="m"),
        Secret("  k-with-newline\n"),
    )
    assert explicit.headers()["x-goog-api-key"] == "k-with-newline"
    assert (
        kind.setup_hint
        and "GEMINI_API_KEY" in kind.setup_hint
        and kind.env_base_url == "GEMINI_BASE_URL"
    )
