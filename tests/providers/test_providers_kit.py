"""The shared provider kit: error classification over every recorded error body shape
(errors.md), retry hints, the context-overflow classifier, the <think> splitter, URLs."""

from __future__ import annotations

import email.utils

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ketch.providers import ErrorKind
from ketch_anthropic.provider import messages_url, output_cap
from ketch_ollama.provider import model_facts, ollama_base
from ketch_openai.base import api_base
from ketch_provider_kit import (
    ThinkTagSplitter,
    classify,
    error_detail,
    known_context_window,
    origin,
    parse_arguments,
    redact,
    retry_after,
    split_late_close_tag,
)

# (status, body, expected kind, retryable, context limit, context used), from errors.md.
CASES = [
    (
        400,
        {
            "error": {
                "message": "This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
        ErrorKind.CONTEXT_LENGTH,
        False,
        4097,
        4294,
    ),
    (
        400,
        {
            "error": {
                "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
                "type": "invalid_request_error",
                "param": "input",
                "code": "context_length_exceeded",
            }
        },
        ErrorKind.CONTEXT_LENGTH,
        False,
        None,
        None,
    ),
    (
        400,
        {
            "error": {
                "message": "This model's maximum context length is 131072 tokens. However, you requested 131134 tokens (122942 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_request_error",
            }
        },
        ErrorKind.CONTEXT_LENGTH,
        False,
        131072,
        131134,
    ),
    (
        400,
        {
            "object": "error",
            "message": "'max_tokens' or 'max_completion_tokens' is too large: 8192. This model's maximum context length is 8192 tokens and your request has 1210 input tokens",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
        ErrorKind.CONTEXT_LENGTH,
        False,
        8192,
        None,
    ),
    (
        400,
        {
            "error": {
                "code": 400,
                "message": "request (9412 tokens) exceeds the available context size (8192 tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 9412,
                "n_ctx": 8192,
            }
        },
        ErrorKind.CONTEXT_LENGTH,
        False,
        8192,
        9412,
    ),
    (
        400,
        {
            "error": {
                "code": 400,
                "message": 'This endpoint\'s maximum context length is 32768 tokens. However, you requested about 42832 tokens (34640 of text input, 8192 in the output). Please reduce the length of either one, or use the "middle-out" transform to compress your prompt automatically.',
            }
        },
        ErrorKind.CONTEXT_LENGTH,
        False,
        32768,
        42832,
    ),
    (
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 203284 tokens > 200000 maximum",
            },
        },
        ErrorKind.CONTEXT_LENGTH,
        False,
        200000,
        203284,
    ),
    (
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, decrease input length or `max_tokens` and try again",
            },
        },
        ErrorKind.CONTEXT_LENGTH,
        False,
        200000,
        199759,
    ),
    (
        400,
        {
            "error": "the prompt is longer than the context length currently available to the model; shorten the prompt"
        },
        ErrorKind.CONTEXT_LENGTH,
        False,
        None,
        None,
    ),
    (
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "max_tokens: 204096 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929",
            },
        },
        ErrorKind.BAD_REQUEST,
        False,
        None,
        None,
    ),
    (
        400,
        {
            "error": {
                "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
                "type": "invalid_request_error",
                "param": "max_tokens",
                "code": "unsupported_parameter",
            }
        },
        ErrorKind.BAD_REQUEST,
        False,
        None,
        None,
    ),
    (
        400,
        {
            "error": {
                "message": "The reasoning_content in the thinking mode must be passed back to the API.",
                "code": "invalid_request_error",
            }
        },
        ErrorKind.BAD_REQUEST,
        False,
        None,
        None,
    ),
    (
        401,
        {
            "error": {
                "message": "Incorrect API key provided",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        },
        ErrorKind.AUTH,
        False,
        None,
        None,
    ),
    (
        402,
        {"error": {"code": 402, "message": "Insufficient credits"}},
        ErrorKind.QUOTA,
        False,
        None,
        None,
    ),
    (
        403,
        {"type": "error", "error": {"type": "permission_error", "message": "no access"}},
        ErrorKind.PERMISSION,
        False,
        None,
        None,
    ),
    (
        404,
        {"error": 'model "llama9" not found, try pulling it first'},
        ErrorKind.NOT_FOUND,
        False,
        None,
        None,
    ),
    (408, {"error": {"message": "timeout"}}, ErrorKind.TIMEOUT, True, None, None),
    (409, {"error": {"message": "conflict"}}, ErrorKind.SERVER, True, None, None),
    (
        429,
        {
            "error": {
                "message": "Rate limit reached for gpt-4o-mini",
                "type": "requests",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        },
        ErrorKind.RATE_LIMIT,
        True,
        None,
        None,
    ),
    (
        429,
        {
            "error": {
                "message": "You exceeded your current quota, please check your plan and billing details.",
                "type": "insufficient_quota",
                "param": None,
                "code": "insufficient_quota",
            }
        },
        ErrorKind.QUOTA,
        False,
        None,
        None,
    ),
    (
        429,
        {
            "type": "error",
            "error": {
                "type": "rate_limit_error",
                "message": "Extra usage is required for long context requests.",
            },
        },
        ErrorKind.QUOTA,
        False,
        None,
        None,
    ),
    (
        500,
        {
            "error": {
                "message": "The server had an error while processing your request.",
                "type": "server_error",
            }
        },
        ErrorKind.SERVER,
        True,
        None,
        None,
    ),
    (502, "<html><body><h1>502 Bad Gateway</h1></body></html>", ErrorKind.SERVER, True, None, None),
    (
        503,
        {"error": "server busy, please try again.  maximum pending requests exceeded"},
        ErrorKind.OVERLOADED,
        True,
        None,
        None,
    ),
    (
        504,
        {"type": "error", "error": {"type": "timeout_error", "message": "timeout"}},
        ErrorKind.TIMEOUT,
        True,
        None,
        None,
    ),
    (
        529,
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        ErrorKind.OVERLOADED,
        True,
        None,
        None,
    ),
    (413, "<html>Request Entity Too Large</html>", ErrorKind.BAD_REQUEST, False, None, None),
]


@pytest.mark.parametrize(("status", "body", "kind", "retryable", "limit", "used"), CASES)
def test_every_recorded_error_body_is_classified(
    status: int, body: object, kind: ErrorKind, retryable: bool, limit: int | None, used: int | None
) -> None:
    error = classify(
        status, body if isinstance(body, str) else __import__("json").dumps(body), {}, provider="p"
    )
    assert (error.kind, error.retryable, error.context_limit, error.context_used) == (
        kind,
        retryable,
        limit,
        used,
    )
    assert (
        error.message.startswith("p: ") and "\n" not in error.message and len(error.message) <= 600
    )


def test_midstream_errors_are_classified_by_their_type() -> None:
    assert (
        classify(
            None,
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            provider="p",
            mid_stream=True,
        ).kind
        == ErrorKind.OVERLOADED
    )
    assert (
        classify(
            None, {"error": {"message": "x", "type": "server_error"}}, provider="p", mid_stream=True
        ).kind
        == ErrorKind.SERVER
    )
    assert classify(None, {"error": "boom"}, provider="p", mid_stream=True).retryable
    openrouter = classify(
        None, {"error": {"code": 429, "message": "slow down"}}, provider="p", mid_stream=True
    )
    assert openrouter.kind == ErrorKind.RATE_LIMIT and openrouter.status is None


def test_x_should_retry_overrides_but_never_for_auth() -> None:
    assert not classify(500, "{}", {"x-should-retry": "false"}, provider="p").retryable
    assert classify(
        400, '{"error":{"message":"odd"}}', {"x-should-retry": "true"}, provider="p"
    ).retryable
    assert not classify(401, "{}", {"x-should-retry": "true"}, provider="p").retryable


def test_openrouter_402_is_retryable_only_with_retry_after() -> None:
    assert not classify(402, "{}", {}, provider="p").retryable
    assert classify(402, "{}", {"retry-after": "3"}, provider="p").retryable


def test_secrets_are_redacted_from_messages() -> None:
    error = classify(
        401,
        '{"error":{"message":"bad key sk-secret-123456 given"}}',
        {},
        provider="p",
        secrets=("sk-secret-123456",),
    )
    assert "sk-secret-123456" not in error.message and "***" in error.message
    assert redact("a sk-x-1 b", ("sk-x-1", None)) == "a *** b"


def test_retry_after_forms() -> None:
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after({"retry-after": "7"}) == 7.0
    assert retry_after({"retry-after": "0.5"}) == 0.5
    when = email.utils.formatdate(1_000_030, usegmt=True)
    assert retry_after({"retry-after": when}, now=1_000_000) == pytest.approx(30)
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None


def test_error_detail_shapes() -> None:
    assert error_detail(b"not json").is_json is False
    assert error_detail('{"error":"plain"}').message == "plain"
    vllm = error_detail('{"object":"error","message":"m","type":"BadRequestError","code":400}')
    assert (vllm.message, vllm.type, vllm.status) == ("m", "BadRequestError", 400)
    anthropic = error_detail(
        '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}'
    )
    assert (anthropic.type, anthropic.request_id) == ("overloaded_error", "req_1")
    router = error_detail(
        '{"error":{"code":502,"message":"Provider returned error","metadata":{"raw":"upstream down"}}}'
    )
    assert router.status == 502 and "upstream down" in router.message


def test_origin_never_shows_credentials_or_paths() -> None:
    assert origin("https://user:pw@example.com:8443/v1/chat") == "https://example.com:8443"


@given(st.lists(st.text(alphabet="<>/thinkab \n", max_size=6), max_size=12))
def test_think_splitter_is_independent_of_chunking(pieces: list[str]) -> None:
    """Feeding the same text in any pieces gives the same reasoning and answer."""
    text = "".join(pieces)

    def split(parts: list[str]) -> tuple[str, str]:
        splitter = ThinkTagSplitter()
        out = [p for part in parts for p in splitter.feed(part)] + splitter.flush()
        return "".join(t for k, t in out if k == "reasoning"), "".join(
            t for k, t in out if k == "text"
        )

    assert split(pieces) == split([text]) == split(list(text))


def test_think_splitter_cases() -> None:
    def run(parts: list[str], **kw: bool) -> list[tuple[str, str]]:
        splitter = ThinkTagSplitter(**kw)
        out = [p for part in parts for p in splitter.feed(part)] + splitter.flush()
        merged: list[tuple[str, str]] = []
        for kind, text in out:
            if merged and merged[-1][0] == kind:
                merged[-1] = (kind, merged[-1][1] + text)
            else:
                merged.append((kind, text))
        return merged

    assert run(["<th", "ink>plan", " it</th", "ink>\n\nAnswer"]) == [
        ("reasoning", "plan it"),
        ("text", "Answer"),
    ]
    assert run(["  <think>x</think>y"]) == [("reasoning", "x"), ("text", "y")]
    assert run(["Hello <think> world"]) == [("text", "Hello <think> world")]  # only at the start
    assert run(["pre-filled thoughts</think>answer"], starts_in_reasoning=True) == [
        ("reasoning", "pre-filled thoughts"),
        ("text", "answer"),
    ]
    assert run(["<think>also fine</think>ok"], starts_in_reasoning=True) == [
        ("reasoning", "also fine"),
        ("text", "ok"),
    ]
    assert run(["<th"]) == [("text", "<th")]  # a stream that ends on half a tag keeps it
    assert split_late_close_tag("thoughts</think>\n answer") == ("thoughts", "answer")
    assert split_late_close_tag("<think>a</think>b") is None


def test_parse_arguments() -> None:
    assert parse_arguments("") == ({}, None)
    assert parse_arguments('{"a": 1}') == ({"a": 1}, None)
    assert parse_arguments('{"a": ')[1].startswith("invalid JSON")
    assert parse_arguments("[1]")[1].startswith("arguments are JSON but not an object")


def test_known_context_windows() -> None:
    assert known_context_window("gpt-4o-mini") == 128_000
    assert known_context_window("gpt-4.1-mini") == 1_047_576
    assert known_context_window("anthropic/claude-sonnet-4") == 200_000
    assert known_context_window("o1-mini-2024-09-12") == 128_000
    assert known_context_window("my-finetune") is None
    assert (
        output_cap("claude-sonnet-4-5-20250929") == 64_000
        and output_cap("claude-opus-4-1") == 32_000
    )


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, "https://api.openai.com/v1"),
        ("http://localhost:8000", "http://localhost:8000/v1"),
        ("http://localhost:8000/", "http://localhost:8000/v1"),
        ("http://localhost:8000/v1/", "http://localhost:8000/v1"),
        ("https://api.z.ai/api/paas/v4", "https://api.z.ai/api/paas/v4"),
        ("https://openrouter.ai/api/v1", "https://openrouter.ai/api/v1"),
        ("localhost:1234", "http://localhost:1234/v1"),
    ],
)
def test_openai_base_url_with_or_without_v1(given: str | None, expected: str) -> None:
    assert api_base(given) == expected


def test_anthropic_url_with_or_without_v1() -> None:
    assert messages_url(None) == "https://api.anthropic.com/v1/messages"
    assert messages_url("https://proxy.example/v1/") == "https://proxy.example/v1/messages"
    assert (
        messages_url("http://127.0.0.1:9", "models?limit=1000")
        == "http://127.0.0.1:9/v1/models?limit=1000"
    )


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        (None, "http://127.0.0.1:11434"),
        ("0.0.0.0", "http://127.0.0.1:11434"),
        ("0.0.0.0:11500", "http://127.0.0.1:11500"),
        ("gpu-box", "http://gpu-box:11434"),
        ("http://gpu-box", "http://gpu-box:80"),
        ("https://ollama.example.com", "https://ollama.example.com:443"),
        ("http://localhost:11434/", "http://localhost:11434"),
        ("http://localhost:11434/v1", "http://localhost:11434"),
        ("[::1]:11434", "http://[::1]:11434"),
    ],
)
def test_ollama_host_is_read_like_the_ollama_cli(host: str | None, expected: str) -> None:
    assert ollama_base(host) == expected


def test_ollama_model_facts() -> None:
    facts = model_facts(
        {
            "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960},
            "parameters": "num_ctx 8192\ntemperature 0.6",
            "capabilities": ["completion", "tools"],
        }
    )
    assert (facts.trained_context, facts.configured_num_ctx, facts.capabilities) == (
        40960,
        8192,
        ["completion", "tools"],
    )
    assert model_facts({}).capabilities is None
