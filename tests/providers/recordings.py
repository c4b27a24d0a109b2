"""Recorded provider streams (transcribed from shared/reference/wire/*.md and the real
recordings they cite), as the exact bytes a server sends, with the events each must
produce. One scenario set per provider kind; the contract tests run them all alike.
"""

from __future__ import annotations

import json
from typing import Any

from ketch.messages import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart, Usage
from ketch.providers import Completed, ReasoningDelta, TextDelta, ToolCallDelta

KINDS = ("openai", "openai-responses", "anthropic", "ollama", "gemini")
CANARY = "sk-canary-7f3a9c1e5b2d4f6a8c0e"


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def sse(*events: Any, eol: str = "\n") -> bytes:
    """SSE bytes. An event is a payload (dict or literal JSON text) for one ``data:``
    line, ``(name, payload)`` for ``event:`` + ``data:``, or ``(":", text)`` for a comment."""
    out: list[str] = []
    for event in events:
        if isinstance(event, tuple) and event[0] == ":":
            out.append(f": {event[1]}{eol}")
            continue
        name, payload = event if isinstance(event, tuple) else (None, event)
        text = payload if isinstance(payload, str) else dumps(payload)
        if name:
            out.append(f"event: {name}{eol}")
        out.append(f"data: {text}{eol}{eol}")
    return "".join(out).encode("utf-8")


def ndjson(*lines: Any) -> bytes:
    return "".join(
        (line if isinstance(line, str) else dumps(line)) + "\n" for line in lines
    ).encode("utf-8")


# --- expected events ----------------------------------------------------------------------


def T(text: str) -> TextDelta:
    return TextDelta(text=text)


def R(text: str) -> ReasoningDelta:
    return ReasoningDelta(text=text)


def C(
    index: int, arguments: str = "", id: str | None = None, name: str | None = None
) -> ToolCallDelta:
    return ToolCallDelta(index=index, id=id, name=name, arguments=arguments)


def done(*parts: Any, stop: str = "end_turn", usage: Usage | None = None) -> Completed:
    return Completed(
        message=Message(id="msg_x", role="assistant", parts=tuple(parts)),
        stop_reason=stop,
        usage=usage or Usage(),
    )  # type: ignore[arg-type]


# --- the request every contract scenario sends ------------------------------------------------

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"location": {"type": "string", "description": "the city"}},
    "required": ["location"],
}
SYSTEM = "You are ketch."


def history(kind: str) -> tuple[Message, ...]:
    """A user turn, an assistant turn with reasoning (this kind's and a foreign one that
    must never be sent), text and two tool calls, their results (one failed), a new question."""
    reasoning = {
        "openai": ReasoningPart(
            text="Need both.", provider="openai", provider_data={"field": "reasoning_content"}
        ),
        "openai-responses": ReasoningPart(
            text="**Plan**",
            provider="openai-responses",
            provider_data={
                "item": {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": "**Plan**"}],
                    "encrypted_content": "gAAAA-done-1",
                }
            },
        ),
        "anthropic": ReasoningPart(
            text="Need both.", signature="EtYDCkYICxgC", provider="anthropic"
        ),
        "ollama": ReasoningPart(text="Need both.", provider="ollama"),
        "gemini": ReasoningPart(text="Need both.", signature="EtYDCkYICxgC", provider="gemini"),
    }[kind]
    # Gemini signs the first call of a step; the others carry nothing (and keep it that way).
    signed = {"thoughtSignature": "Es8FCswF", "id": True} if kind == "gemini" else None
    return (
        Message.user("Weather in Florence and Rome?"),
        Message(
            role="assistant",
            parts=(
                ReasoningPart(
                    text="someone else's thoughts", provider="elsewhere", signature="zzz"
                ),
                reasoning,
                TextPart(text="Checking both."),
                ToolCallPart(
                    id="call_1",
                    name="weather",
                    input={"location": "Florence"},
                    provider_data=signed,
                ),
                ToolCallPart(id="call_2", name="weather", input={"location": "Rome"}),
            ),
        ),
        Message(
            role="tool",
            parts=(
                ToolResultPart(tool_call_id="call_1", name="weather", ok=True, output="40 C"),
                ToolResultPart(
                    tool_call_id="call_2", name="weather", ok=False, output="error: station offline"
                ),
            ),
        ),
        Message.user("And tomorrow?"),
    )


MODEL = {
    "openai": "m",
    "openai-responses": "gpt-5-mini",
    "anthropic": "m",
    "ollama": "m",
    "gemini": "gemini-2.5-flash",
}


def expected_body(kind: str) -> dict[str, Any]:
    """The exact JSON body each kind must send for the request above."""
    florence, rome = '{"location": "Florence"}', '{"location": "Rome"}'
    if kind == "gemini":
        return {
            "contents": [
                {"role": "user", "parts": [{"text": "Weather in Florence and Rome?"}]},
                {
                    "role": "model",
                    "parts": [
                        {"text": "Need both.", "thought": True, "thoughtSignature": "EtYDCkYICxgC"},
                        {"text": "Checking both."},
                        {
                            "functionCall": {
                                "name": "weather",
                                "args": {"location": "Florence"},
                                "id": "call_1",
                            },
                            "thoughtSignature": "Es8FCswF",
                        },
                        {
                            "functionCall": {
                                "name": "weather",
                                "args": {"location": "Rome"},
                                "id": "call_2",
                            }
                        },
                    ],
                },
                {
                    "role": "user",
                    "parts": [
                        {
                            "functionResponse": {
                                "name": "weather",
                                "response": {"output": "40 C"},
                                "id": "call_1",
                            }
                        },
                        {
                            "functionResponse": {
                                "name": "weather",
                                "response": {"error": "error: station offline"},
                                "id": "call_2",
                            }
                        },
                        {"text": "And tomorrow?"},
                    ],
                },
            ],
            "systemInstruction": {"parts": [{"text": SYSTEM}]},
            "tools": [
                {
                    "functionDeclarations": [
                        {
                            "name": "weather",
                            "description": "Get weather information for a location",
                            "parametersJsonSchema": WEATHER_SCHEMA,
                        }
                    ]
                }
            ],
            "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
            "generationConfig": {
                "maxOutputTokens": 1000,
                "thinkingConfig": {"includeThoughts": True},
            },
        }
    if kind == "openai":
        return {
            "model": "m",
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": "Weather in Florence and Rome?"},
                {
                    "role": "assistant",
                    "content": "Checking both.",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "weather", "arguments": florence},
                        },
                        {
                            "id": "call_2",
                            "type": "function",
                            "function": {"name": "weather", "arguments": rome},
                        },
                    ],
                    "reasoning_content": "Need both.",
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "40 C"},
                {"role": "tool", "tool_call_id": "call_2", "content": "error: station offline"},
                {"role": "user", "content": "And tomorrow?"},
            ],
            "stream": True,
            "stream_options": {"include_usage": True},
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "weather",
                        "description": "Get weather information for a location",
                        "parameters": WEATHER_SCHEMA,
                    },
                }
            ],
            "tool_choice": "auto",
            "max_tokens": 1000,
        }
    if kind == "openai-responses":
        return {
            "model": "gpt-5-mini",
            "input": [
                {
                    "role": "user",
                    "content": [{"type": "input_text", "text": "Weather in Florence and Rome?"}],
                },
                {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": "**Plan**"}],
                    "encrypted_content": "gAAAA-done-1",
                },
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Checking both."}],
                },
                {
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "weather",
                    "arguments": florence,
                },
                {
                    "type": "function_call",
                    "call_id": "call_2",
                    "name": "weather",
                    "arguments": rome,
                },
                {"type": "function_call_output", "call_id": "call_1", "output": "40 C"},
                {
                    "type": "function_call_output",
                    "call_id": "call_2",
                    "output": "error: station offline",
                },
                {"role": "user", "content": [{"type": "input_text", "text": "And tomorrow?"}]},
            ],
            "stream": True,
            "store": False,
            "instructions": SYSTEM,
            "tools": [
                {
                    "type": "function",
                    "name": "weather",
                    "description": "Get weather information for a location",
                    "parameters": WEATHER_SCHEMA,
                    "strict": False,
                }
            ],
            "max_output_tokens": 1000,
            "reasoning": {"summary": "auto"},
            "include": ["reasoning.encrypted_content"],
        }
    if kind == "anthropic":
        return {
            "model": "m",
            "max_tokens": 1000,
            "stream": True,
            "system": [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "Weather in Florence and Rome?"}],
                },
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "Need both.", "signature": "EtYDCkYICxgC"},
                        {"type": "text", "text": "Checking both."},
                        {
                            "type": "tool_use",
                            "id": "call_1",
                            "name": "weather",
                            "input": {"location": "Florence"},
                        },
                        {
                            "type": "tool_use",
                            "id": "call_2",
                            "name": "weather",
                            "input": {"location": "Rome"},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "call_1",
                            "content": [{"type": "text", "text": "40 C"}],
                        },
                        {
                            "type": "tool_result",
                            "tool_use_id": "call_2",
                            "content": [{"type": "text", "text": "error: station offline"}],
                            "is_error": True,
                        },
                        {
                            "type": "text",
                            "text": "And tomorrow?",
                            "cache_control": {"type": "ephemeral"},
                        },
                    ],
                },
            ],
            "tools": [
                {
                    "name": "weather",
                    "description": "Get weather information for a location",
                    "input_schema": WEATHER_SCHEMA,
                }
            ],
        }
    return {
        "model": "m",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Weather in Florence and Rome?"},
            {
                "role": "assistant",
                "content": "Checking both.",
                "thinking": "Need both.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {
                            "index": 0,
                            "name": "weather",
                            "arguments": {"location": "Florence"},
                        },
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {
                            "index": 1,
                            "name": "weather",
                            "arguments": {"location": "Rome"},
                        },
                    },
                ],
            },
            {"role": "tool", "content": "40 C", "tool_name": "weather", "tool_call_id": "call_1"},
            {
                "role": "tool",
                "content": "error: station offline",
                "tool_name": "weather",
                "tool_call_id": "call_2",
            },
            {"role": "user", "content": "And tomorrow?"},
        ],
        "stream": True,
        "options": {"num_ctx": 32768, "num_predict": 1000},
        "truncate": False,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "weather",
                    "description": "Get weather information for a location",
                    "parameters": WEATHER_SCHEMA,
                },
            }
        ],
        "think": True,
    }


# Ollama's /api/show answer in every test (llama architecture, 128k trained, tools + thinking).
OLLAMA_SHOW = {
    "parameters": 'temperature 0.7\nstop "<|eot_id|>"',
    "model_info": {"general.architecture": "llama", "llama.context_length": 131072},
    "capabilities": ["completion", "tools", "thinking"],
}

UTF8_PIECES = ["Grüße", " aus", " Köln", " — 東京", " 🌍", "!"]


# --- OpenAI chat completions ---------------------------------------------------------------------

_OA = {
    "id": "chatcmpl-A8Yx",
    "object": "chat.completion.chunk",
    "created": 1726000000,
    "model": "gpt-4o-2024-08-06",
    "system_fingerprint": "fp_a7d06e42a7",
}


def _oa(
    delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    chunk = dict(_OA)
    chunk["choices"] = [
        {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}
    ]
    chunk.update(extra)
    return chunk


def _oa_usage(prompt: int, completion: int, **details: Any) -> dict[str, Any]:
    return {
        **_OA,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            **details,
        },
    }


_PLAIN_TOKENS = ["I'm", " unable", " to", " provide", " real-time", " weather", " updates", "."]


def openai() -> dict[str, Any]:
    plain_events: list[Any] = [
        (":", "OPENROUTER PROCESSING"),
        _oa({"role": "assistant", "content": "", "refusal": None}, usage=None, obfuscation="pQ3"),
        *[_oa({"content": t}, usage=None, obfuscation="xx") for t in _PLAIN_TOKENS],
        _oa({}, "stop"),
        _oa_usage(14, 30, completion_tokens_details={"reasoning_tokens": 0}),
        "[DONE]",
    ]
    llama = {
        "created": 1762000000,
        "id": "chatcmpl-Gd1",
        "model": "gpt-oss-20b",
        "system_fingerprint": "b7010-5b180c3d6",
        "object": "chat.completion.chunk",
    }

    def lc(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"choices": [{"finish_reason": finish, "index": 0, "delta": delta}], **llama}

    thoughts = [
        "We",
        " need",
        " to",
        " call",
        " function",
        " '",
        "weather",
        "'",
        " with",
        " location",
    ]
    fragments = ["location", '":"', "Flor", "ence", ",", " Italy", '"}']
    tool_split = [
        lc({"role": "assistant", "content": None}),
        *[lc({"reasoning_content": t}) for t in thoughts],
        lc(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "1wNpqrejg1FCTjf6xq8JRCGKgWZO74AL",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"'},
                    }
                ]
            }
        ),
        *[lc({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in fragments],
        lc({}, "tool_calls"),
        {
            "choices": [],
            **llama,
            "usage": {"completion_tokens": 42, "prompt_tokens": 139, "total_tokens": 181},
            "timings": {"prompt_n": 139, "predicted_n": 42},
        },
        "[DONE]",
    ]
    city = [
        '{"ci',
        'ty": ',
        '"Edinb',
        "urgh",
        '", "c',
        "ountry",
        '": "',
        'GB", ',
        '"units',
        '": "',
        'c"}',
    ]
    stock = ['{"ti', 'cker"', ': "AAP', 'L", ', '"exch', 'ange":', ' "NA', 'SDAQ"', "}"]
    parallel = [
        _oa({"role": "assistant", "content": None}),
        _oa(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_JMW1whyEaYG438VE1OIflxA2",
                        "type": "function",
                        "function": {"name": "GetWeatherArgs", "arguments": ""},
                    }
                ]
            }
        ),
        *[_oa({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in city],
        _oa(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                        "type": "function",
                        "function": {"name": "get_stock_price", "arguments": ""},
                    }
                ]
            }
        ),
        *[_oa({"tool_calls": [{"index": 1, "function": {"arguments": f}}]}) for f in stock],
        _oa({}, "tool_calls"),
        _oa_usage(149, 60, completion_tokens_details={"reasoning_tokens": 0}),
        "[DONE]",
    ]
    router = {
        "id": "gen-1773326256-GfjuN0tRbvSxE7XpT5vu",
        "object": "chat.completion.chunk",
        "created": 1773326256,
        "model": "anthropic/claude-4-sonnet-20250522",
        "provider": "Google",
    }

    def rc(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            **router,
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", **delta},
                    "finish_reason": finish,
                    "native_finish_reason": finish,
                }
            ],
        }

    detail = {"type": "reasoning.text", "format": "anthropic-claude-v1", "index": 0}
    think = ["The user is asking for weather information for", " Florence, Italy."]
    args = ['{"loca', "ti", 'on"', ': "Florence,', " I", 'taly"}']
    reasoning = [
        (":", "OPENROUTER PROCESSING"),
        *[
            rc({"content": "", "reasoning": t, "reasoning_details": [{**detail, "text": t}]})
            for t in think
        ],
        rc(
            {
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "toolu_vrtx_01NRAptSJVJEik354SSeQZAs",
                        "type": "function",
                        "function": {"name": "weather", "arguments": ""},
                    }
                ],
            }
        ),
        rc({"content": None, "tool_calls": [{"index": 0, "function": {"arguments": ""}}]}),
        *[
            rc({"content": None, "tool_calls": [{"index": 0, "function": {"arguments": a}}]})
            for a in args
        ],
        rc(
            {
                "content": "",
                "reasoning_details": [
                    {
                        "type": "reasoning.text",
                        "signature": "EqkDCkgICxACGAIqQPS7",
                        "format": "anthropic-claude-v1",
                        "index": 0,
                    }
                ],
            }
        ),
        rc({"content": "", "reasoning": None}, "tool_calls"),
        {
            **router,
            "choices": [],
            "usage": {
                "prompt_tokens": 424,
                "completion_tokens": 110,
                "total_tokens": 534,
                "prompt_tokens_details": {"cached_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 64},
            },
        },
        "[DONE]",
    ]
    utf8 = [
        _oa({"role": "assistant", "content": ""}),
        *[_oa({"content": p}) for p in UTF8_PIECES],
        _oa({}, "stop"),
        _oa_usage(9, 7),
        "[DONE]",
    ]
    cut = [
        _oa({"role": "assistant", "content": None}),
        _oa(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_cut",
                        "type": "function",
                        "function": {"name": "write_file", "arguments": '{"path": "a.txt", "con'},
                    }
                ]
            }
        ),
        _oa({"tool_calls": [{"index": 0, "function": {"arguments": 'tent": "Filing tax'}}]}),
        _oa({}, "length"),
        _oa_usage(50, 16),
        "[DONE]",
    ]
    plain_text = "".join(_PLAIN_TOKENS)
    florence = '{"location":"Florence, Italy"}'
    return {
        "content_type": "text/event-stream",
        "streams": {
            "plain": sse(*plain_events),
            "tool_split": sse(*tool_split),
            "parallel": sse(*parallel),
            "reasoning": sse(*reasoning),
            "utf8": sse(*utf8, eol="\r\n"),
            "truncated": sse(*plain_events[:-2]),
            "garbage": sse(*plain_events[:4])
            + b"HTTP/1.1 200 garbage from a proxy\n\n"
            + sse(*plain_events[4:]),
            "garbage_data": sse(*plain_events[:4])
            + b'data: {"choices":[{"index":0,"delta":{"content":"ok"\n\n'
            + sse(*plain_events[4:]),
            "midstream_error": sse(
                *plain_events[1:4],
                {
                    "error": {
                        "message": "The server experienced an error while processing your request. Sorry about that!",
                        "type": "server_error",
                        "param": None,
                        "code": None,
                    }
                },
            ),
            "cut_tool": sse(*cut),
        },
        "events": {
            "plain": [
                *map(T, _PLAIN_TOKENS),
                done(TextPart(text=plain_text), usage=Usage(input_tokens=14, output_tokens=30)),
            ],
            "tool_split": [
                *map(R, thoughts),
                C(0, '{"', "1wNpqrejg1FCTjf6xq8JRCGKgWZO74AL", "weather"),
                *[C(0, f) for f in fragments],
                done(
                    ReasoningPart(
                        text="".join(thoughts),
                        provider="openai",
                        provider_data={"field": "reasoning_content"},
                    ),
                    ToolCallPart(
                        id="1wNpqrejg1FCTjf6xq8JRCGKgWZO74AL",
                        name="weather",
                        input={"location": "Florence, Italy"},
                        provider_data={"arguments": florence},
                    ),
                    stop="tool_use",
                    usage=Usage(input_tokens=139, output_tokens=42),
                ),
            ],
            "parallel": [
                C(0, "", "call_JMW1whyEaYG438VE1OIflxA2", "GetWeatherArgs"),
                *[C(0, f) for f in city],
                C(1, "", "call_DNYTawLBoN8fj3KN6qU9N1Ou", "get_stock_price"),
                *[C(1, f) for f in stock],
                done(
                    ToolCallPart(
                        id="call_JMW1whyEaYG438VE1OIflxA2",
                        name="GetWeatherArgs",
                        input={"city": "Edinburgh", "country": "GB", "units": "c"},
                        provider_data={"arguments": "".join(city)},
                    ),
                    ToolCallPart(
                        id="call_DNYTawLBoN8fj3KN6qU9N1Ou",
                        name="get_stock_price",
                        input={"ticker": "AAPL", "exchange": "NASDAQ"},
                        provider_data={"arguments": "".join(stock)},
                    ),
                    stop="tool_use",
                    usage=Usage(input_tokens=149, output_tokens=60),
                ),
            ],
            "reasoning": [
                *map(R, think),
                C(0, "", "toolu_vrtx_01NRAptSJVJEik354SSeQZAs", "weather"),
                *[C(0, a) for a in args],
                done(
                    ReasoningPart(
                        text="".join(think),
                        provider="openai",
                        provider_data={
                            "reasoning_details": [
                                {
                                    **detail,
                                    "text": "".join(think),
                                    "signature": "EqkDCkgICxACGAIqQPS7",
                                }
                            ],
                            "field": "reasoning",
                        },
                    ),
                    ToolCallPart(
                        id="toolu_vrtx_01NRAptSJVJEik354SSeQZAs",
                        name="weather",
                        input={"location": "Florence, Italy"},
                        provider_data={"arguments": "".join(args)},
                    ),
                    stop="tool_use",
                    usage=Usage(input_tokens=424, output_tokens=110, reasoning_tokens=64),
                ),
            ],
            "utf8": [
                *map(T, UTF8_PIECES),
                done(
                    TextPart(text="".join(UTF8_PIECES)),
                    usage=Usage(input_tokens=9, output_tokens=7),
                ),
            ],
            "truncated": list(map(T, _PLAIN_TOKENS)),
            "garbage": [
                *map(T, _PLAIN_TOKENS),
                done(TextPart(text=plain_text), usage=Usage(input_tokens=14, output_tokens=30)),
            ],
            "garbage_data": list(map(T, _PLAIN_TOKENS[:2])),
            "midstream_error": list(map(T, _PLAIN_TOKENS[:2])),
            "cut_tool": [
                C(0, '{"path": "a.txt", "con', "call_cut", "write_file"),
                C(0, 'tent": "Filing tax'),
                "cut",  # a Completed whose only call carries input_error (checked by the test)
            ],
        },
        "errors": {
            "rate_limit": (
                429,
                {"retry-after-ms": "20"},
                {
                    "error": {
                        "message": "Rate limit reached for gpt-4o-mini in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20ms.",
                        "type": "requests",
                        "param": None,
                        "code": "rate_limit_exceeded",
                    }
                },
            ),
            "auth": (
                401,
                {},
                {
                    "error": {
                        "message": f"Incorrect API key provided: {CANARY}. You can find your API key at https://platform.openai.com/account/api-keys.",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": "invalid_api_key",
                    }
                },
            ),
            "overflow": (
                400,
                {},
                {
                    "error": {
                        "message": "This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.",
                        "type": "invalid_request_error",
                        "param": "messages",
                        "code": "context_length_exceeded",
                    }
                },
            ),
            "server": (
                500,
                {},
                {
                    "error": {
                        "message": "The server had an error while processing your request. Sorry about that!",
                        "type": "server_error",
                        "param": None,
                        "code": None,
                    }
                },
            ),
        },
        "overflow_numbers": (4097, 4294),
    }


# --- OpenAI Responses ---------------------------------------------------------------------------------

_RESP_ID = "resp_04fcf497c9f5b8760169b2ff9ff27081959917b8d19daecc20"


def _response(
    status: str, output: list[Any] | None = None, usage: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "id": _RESP_ID,
        "object": "response",
        "created_at": 1773338527,
        "status": status,
        "model": "gpt-5-mini",
        "output": output or [],
        "store": False,
        "usage": usage,
        **extra,
    }


def _usage(inp: int, out: int, reasoning: int = 0, cached: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": inp + out,
    }


def _rs(kind: str, seq: int, **fields: Any) -> tuple[str, dict[str, Any]]:
    return (kind, {"type": kind, **fields, "sequence_number": seq})


def responses() -> dict[str, Any]:
    def message_stream(pieces: list[str], usage: dict[str, Any], eol: str = "\n") -> list[Any]:
        msg_id = "msg_68b1a2"
        item = {
            "id": msg_id,
            "type": "message",
            "status": "in_progress",
            "content": [],
            "role": "assistant",
        }
        final = {
            **item,
            "status": "completed",
            "content": [{"type": "output_text", "annotations": [], "text": "".join(pieces)}],
        }
        return [
            _rs("response.created", 0, response=_response("in_progress")),
            _rs("response.in_progress", 1, response=_response("in_progress")),
            _rs("response.output_item.added", 2, output_index=0, item=item),
            _rs(
                "response.content_part.added",
                3,
                item_id=msg_id,
                output_index=0,
                content_index=0,
                part={"type": "output_text", "annotations": [], "text": ""},
            ),
            *[
                _rs(
                    "response.output_text.delta",
                    4 + i,
                    item_id=msg_id,
                    output_index=0,
                    content_index=0,
                    delta=p,
                    obfuscation="q1",
                )
                for i, p in enumerate(pieces)
            ],
            _rs(
                "response.output_text.done",
                20,
                item_id=msg_id,
                output_index=0,
                content_index=0,
                text="".join(pieces),
            ),
            _rs(
                "response.content_part.done",
                21,
                item_id=msg_id,
                output_index=0,
                content_index=0,
                part={"type": "output_text", "annotations": [], "text": "".join(pieces)},
            ),
            _rs("response.output_item.done", 22, output_index=0, item=final),
            _rs("response.completed", 23, response=_response("completed", [final], usage)),
        ]

    def call_events(
        index: int,
        fc_id: str,
        call_id: str,
        name: str,
        fragments: list[str],
        seq: int,
        finish: bool = True,
    ) -> list[Any]:
        item = {
            "id": fc_id,
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": call_id,
            "name": name,
        }
        events: list[Any] = [_rs("response.output_item.added", seq, output_index=index, item=item)]
        events += [
            _rs(
                "response.function_call_arguments.delta",
                seq + 1 + i,
                item_id=fc_id,
                output_index=index,
                delta=f,
                obfuscation="z",
            )
            for i, f in enumerate(fragments)
        ]
        if finish:
            arguments = "".join(fragments)
            events.append(
                _rs(
                    "response.function_call_arguments.done",
                    seq + 40,
                    item_id=fc_id,
                    output_index=index,
                    arguments=arguments,
                )
            )
            events.append(
                _rs(
                    "response.output_item.done",
                    seq + 41,
                    output_index=index,
                    item={**item, "status": "completed", "arguments": arguments},
                )
            )
        return events

    head = [
        _rs("response.created", 0, response=_response("in_progress")),
        _rs("response.in_progress", 1, response=_response("in_progress")),
    ]
    fragments = ['{"', "location", '":"', "Flor", "ence", ",", " Italy", '"}']
    florence = '{"location":"Florence, Italy"}'
    tool_split = [
        *head,
        *call_events(0, "fc_04fcf497", "call_XjLMCgd17m2E4EOiIVoc4J91", "weather", fragments, 2),
        _rs("response.completed", 90, response=_response("completed", [], _usage(66, 148))),
    ]
    parallel = [
        *head,
        *call_events(0, "fc_a1", "call_A1", "weather", ['{"location":', '"Florence"}'], 2),
        *call_events(1, "fc_b2", "call_B2", "weather", ['{"loc', 'ation":"Rome"}'], 50),
        _rs("response.completed", 99, response=_response("completed", [], _usage(80, 40))),
    ]
    rs_id = "rs_04fcf497c9f5b8760169b2ffa108888195ba649a92a2f17e92"
    summary = [
        "**Getting",
        " weather",
        " for",
        " Florence",
        "**\n\nThe",
        " user",
        " wants",
        " the",
        " weather",
        ".",
    ]
    summary_text = "".join(summary)
    reasoning_done = {
        "id": rs_id,
        "type": "reasoning",
        "encrypted_content": "gAAAAABpsv-jnw-8k8joGbz9prEL-DONE",
        "summary": [{"type": "summary_text", "text": summary_text}],
    }
    reasoning = [
        *head,
        _rs(
            "response.output_item.added",
            2,
            output_index=0,
            item={
                "id": rs_id,
                "type": "reasoning",
                "encrypted_content": "gAAAAABpsv-hvjC3ll56K8M8-ADDED",
                "summary": [],
            },
        ),
        _rs(
            "response.reasoning_summary_part.added",
            3,
            item_id=rs_id,
            output_index=0,
            summary_index=0,
            part={"type": "summary_text", "text": ""},
        ),
        *[
            _rs(
                "response.reasoning_summary_text.delta",
                4 + i,
                item_id=rs_id,
                output_index=0,
                summary_index=0,
                delta=d,
                obfuscation="o",
            )
            for i, d in enumerate(summary)
        ],
        _rs(
            "response.reasoning_summary_text.done",
            30,
            item_id=rs_id,
            output_index=0,
            summary_index=0,
            text=summary_text,
        ),
        _rs(
            "response.reasoning_summary_part.done",
            31,
            item_id=rs_id,
            output_index=0,
            summary_index=0,
            part={"type": "summary_text", "text": summary_text},
        ),
        _rs("response.output_item.done", 32, output_index=0, item=reasoning_done),
        *call_events(1, "fc_04fcf497", "call_XjLMCgd17m2E4EOiIVoc4J91", "weather", fragments, 33),
        _rs(
            "response.completed",
            99,
            response=_response(
                "completed",
                [{**reasoning_done, "encrypted_content": "gAAAA-completed-copy"}],
                _usage(66, 148, 64),
            ),
        ),
    ]
    cut = [
        *head,
        *call_events(
            0,
            "fc_cut",
            "call_cut",
            "write_file",
            ['{"path": "a.txt", "con', 'tent": "Filing tax'],
            2,
            finish=False,
        ),
        _rs(
            "response.incomplete",
            50,
            response=_response(
                "incomplete", [], _usage(50, 16), incomplete_details={"reason": "max_output_tokens"}
            ),
        ),
    ]
    plain = message_stream(_PLAIN_TOKENS, _usage(14, 30))
    plain_text = "".join(_PLAIN_TOKENS)
    return {
        "content_type": "text/event-stream; charset=utf-8",
        "streams": {
            "plain": sse(*plain),
            "tool_split": sse(*tool_split),
            "parallel": sse(*parallel),
            "reasoning": sse(*reasoning),
            "utf8": sse(*message_stream(UTF8_PIECES, _usage(9, 7)), eol="\r\n"),
            "truncated": sse(*plain[:-1]),
            "garbage": sse(*plain[:6]) + b"<html>proxy noise</html>\n\n" + sse(*plain[6:]),
            "garbage_data": sse(*plain[:6])
            + b"event: response.output_text.delta\ndata: {not json\n\n"
            + sse(*plain[6:]),
            "midstream_error": sse(
                *plain[:6],
                _rs(
                    "error",
                    6,
                    code="server_error",
                    message="The server had an error while processing your request. Sorry about that!",
                    param=None,
                ),
            ),
            "cut_tool": sse(*cut),
        },
        "events": {
            "plain": [
                *map(T, _PLAIN_TOKENS),
                done(TextPart(text=plain_text), usage=Usage(input_tokens=14, output_tokens=30)),
            ],
            "tool_split": [
                C(0, "", "call_XjLMCgd17m2E4EOiIVoc4J91", "weather"),
                *[C(0, f) for f in fragments],
                done(
                    ToolCallPart(
                        id="call_XjLMCgd17m2E4EOiIVoc4J91",
                        name="weather",
                        input={"location": "Florence, Italy"},
                        provider_data={"arguments": florence},
                    ),
                    stop="tool_use",
                    usage=Usage(input_tokens=66, output_tokens=148),
                ),
            ],
            "parallel": [
                C(0, "", "call_A1", "weather"),
                C(0, '{"location":'),
                C(0, '"Florence"}'),
                C(1, "", "call_B2", "weather"),
                C(1, '{"loc'),
                C(1, 'ation":"Rome"}'),
                done(
                    ToolCallPart(
                        id="call_A1",
                        name="weather",
                        input={"location": "Florence"},
                        provider_data={"arguments": '{"location":"Florence"}'},
                    ),
                    ToolCallPart(
                        id="call_B2",
                        name="weather",
                        input={"location": "Rome"},
                        provider_data={"arguments": '{"location":"Rome"}'},
                    ),
                    stop="tool_use",
                    usage=Usage(input_tokens=80, output_tokens=40),
                ),
            ],
            "reasoning": [
                *map(R, summary),
                C(1, "", "call_XjLMCgd17m2E4EOiIVoc4J91", "weather"),
                *[C(1, f) for f in fragments],
                done(
                    ReasoningPart(
                        text=summary_text,
                        provider="openai-responses",
                        provider_data={
                            "item": {
                                "type": "reasoning",
                                "summary": reasoning_done["summary"],
                                "encrypted_content": "gAAAAABpsv-jnw-8k8joGbz9prEL-DONE",
                            }
                        },
                    ),
                    ToolCallPart(
                        id="call_XjLMCgd17m2E4EOiIVoc4J91",
                        name="weather",
                        input={"location": "Florence, Italy"},
                        provider_data={"arguments": florence},
                    ),
                    stop="tool_use",
                    usage=Usage(input_tokens=66, output_tokens=148, reasoning_tokens=64),
                ),
            ],
            "utf8": [
                *map(T, UTF8_PIECES),
                done(
                    TextPart(text="".join(UTF8_PIECES)),
                    usage=Usage(input_tokens=9, output_tokens=7),
                ),
            ],
            "truncated": list(map(T, _PLAIN_TOKENS)),
            "garbage": [
                *map(T, _PLAIN_TOKENS),
                done(TextPart(text=plain_text), usage=Usage(input_tokens=14, output_tokens=30)),
            ],
            "garbage_data": list(map(T, _PLAIN_TOKENS[:2])),
            "midstream_error": list(map(T, _PLAIN_TOKENS[:2])),
            "cut_tool": [
                C(0, "", "call_cut", "write_file"),
                C(0, '{"path": "a.txt", "con'),
                C(0, 'tent": "Filing tax'),
                "cut",
            ],
        },
        "errors": {
            "rate_limit": (
                429,
                {"retry-after-ms": "20"},
                {
                    "error": {
                        "message": "Rate limit reached for gpt-5-mini on tokens per min (TPM). Please try again in 20ms.",
                        "type": "tokens",
                        "param": None,
                        "code": "rate_limit_exceeded",
                    }
                },
            ),
            "auth": (
                401,
                {},
                {
                    "error": {
                        "message": f"Incorrect API key provided: {CANARY}.",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": "invalid_api_key",
                    }
                },
            ),
            "overflow": (
                400,
                {},
                {
                    "error": {
                        "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
                        "type": "invalid_request_error",
                        "param": "input",
                        "code": "context_length_exceeded",
                    }
                },
            ),
            "server": (
                500,
                {},
                {
                    "error": {
                        "message": "The server had an error while processing your request. Sorry about that!",
                        "type": "server_error",
                        "param": None,
                        "code": None,
                    }
                },
            ),
        },
        "overflow_numbers": (None, None),
    }


# --- Anthropic ---------------------------------------------------------------------------------------


def _an(kind: str, payload: str | dict[str, Any]) -> tuple[str, str | dict[str, Any]]:
    return (kind, payload)


def _start(model: str, inp: int, out: int = 1, **usage: Any) -> tuple[str, dict[str, Any]]:
    message = {
        "id": "msg_4QpJur2dWWDjF6C758FbBw5vm12BaVipnK",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": model,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": inp, "output_tokens": out, **usage},
    }
    return ("message_start", {"type": "message_start", "message": message})


def _delta(index: int, kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    return (
        "content_block_delta",
        {"type": "content_block_delta", "index": index, "delta": {"type": kind, **fields}},
    )


def _block(index: int, block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )


def _stop(index: int) -> tuple[str, dict[str, Any]]:
    return ("content_block_stop", {"type": "content_block_stop", "index": index})


def _message_delta(stop: str, **usage: Any) -> tuple[str, dict[str, Any]]:
    return (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": usage,
        },
    )


PING = ("ping", '{"type": "ping"}')
MESSAGE_STOP = ("message_stop", '{"type":"message_stop"      }')  # trailing spaces, as recorded


def anthropic() -> dict[str, Any]:
    hello = ["Hello", " there", "!"]
    plain = [
        _start("claude-3-opus-latest", 11),
        _block(0, {"type": "text", "text": ""}),
        PING,
        *[_delta(0, "text_delta", text=t) for t in hello],
        _stop(0),
        _message_delta("end_turn", output_tokens=6),
        MESSAGE_STOP,
    ]
    paris = ["", '{"locati', 'on": "P', "ar", 'is"}']
    tool_split = [
        _start(
            "claude-sonnet-4-20250514",
            377,
            cache_creation_input_tokens=0,
            cache_read_input_tokens=0,
            service_tier="standard",
        ),
        _block(0, {"type": "text", "text": ""}),
        PING,
        _delta(0, "text_delta", text="I"),
        _delta(0, "text_delta", text="'ll check the current weather in Paris for you."),
        _stop(0),
        _block(
            1,
            {
                "type": "tool_use",
                "id": "toolu_01NRLabsLyVHZPKxbKvkfSMn",
                "name": "get_weather",
                "caller": {"type": "direct"},
                "input": {},
            },
        ),
        *[_delta(1, "input_json_delta", partial_json=p) for p in paris],
        _stop(1),
        _message_delta("tool_use", output_tokens=65),
        MESSAGE_STOP,
    ]
    intro = ["I'll add and", " multiply the numbers", " 2 and 3 for", " you."]
    add, mul = ["", '{"a": 2', ', "b"', ": 3}"], ["", '{"a": 2', ', "b":', " 3}"]
    parallel = [
        _start(
            "claude-sonnet-4-20250514",
            502,
            4,
            cache_creation_input_tokens=0,
            cache_read_input_tokens=0,
            service_tier="standard",
            inference_geo="not_available",
        ),
        _block(0, {"type": "text", "text": ""}),
        PING,
        *[_delta(0, "text_delta", text=t) for t in intro],
        _stop(0),
        _block(
            1,
            {
                "type": "tool_use",
                "id": "toolu_01UYxUYC2zRPY8wiutnF48eP",
                "name": "add",
                "input": {},
                "caller": {"type": "direct"},
            },
        ),
        *[_delta(1, "input_json_delta", partial_json=p) for p in add],
        _stop(1),
        _block(
            2,
            {
                "type": "tool_use",
                "id": "toolu_01VaRx1jpWCvPhi7L4kywAcd",
                "name": "multiply",
                "input": {},
                "caller": {"type": "direct"},
            },
        ),
        *[_delta(2, "input_json_delta", partial_json=p) for p in mul],
        _stop(2),
        _message_delta(
            "tool_use",
            input_tokens=502,
            cache_creation_input_tokens=0,
            cache_read_input_tokens=200,
            output_tokens=137,
        ),
        MESSAGE_STOP,
    ]
    thoughts = [
        "The user is asking for",
        " weather information for Florence, Italy. I",
        " should call the weather tool.\n",
        "",
    ]
    signature = "EtYDCkYICxgCKkAVHEWRYo6RYAQ=="
    location = ["", '{"', "lo", "catio", 'n": "Florenc', "e, Italy", '"}']
    reasoning = [
        _start("claude-sonnet-4-20250514", 424, 5),
        _block(0, {"type": "thinking", "thinking": "", "signature": ""}),
        PING,
        *[_delta(0, "thinking_delta", thinking=t) for t in thoughts],
        _delta(0, "signature_delta", signature=signature),
        _stop(0),
        _block(
            1,
            {
                "type": "redacted_thinking",
                "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw",
            },
        ),
        _stop(1),
        _block(
            2,
            {
                "type": "tool_use",
                "id": "toolu_01Js4AMfx5qpTLhwTusnvT68",
                "name": "weather",
                "input": {},
                "caller": {"type": "direct"},
            },
        ),
        *[_delta(2, "input_json_delta", partial_json=p) for p in location],
        _stop(2),
        _message_delta("tool_use", input_tokens=424, output_tokens=119),
        MESSAGE_STOP,
    ]
    utf8 = [
        _start("claude-sonnet-4-20250514", 9),
        _block(0, {"type": "text", "text": ""}),
        *[_delta(0, "text_delta", text=t) for t in UTF8_PIECES],
        _stop(0),
        _message_delta("end_turn", output_tokens=7),
        MESSAGE_STOP,
    ]
    cut = [
        _start("claude-sonnet-4-20250514", 50),
        _block(0, {"type": "tool_use", "id": "toolu_cut", "name": "write_file", "input": {}}),
        _delta(0, "input_json_delta", partial_json='{"path": "a.txt", "con'),
        _delta(0, "input_json_delta", partial_json='tent": "\\n\\"Filing taxes'),
        _message_delta("max_tokens", output_tokens=16),
        MESSAGE_STOP,
    ]
    return {
        "content_type": "text/event-stream; charset=utf-8",
        "streams": {
            "plain": sse(*plain),
            "tool_split": sse(*tool_split),
            "parallel": sse(*parallel),
            "reasoning": sse(*reasoning),
            "utf8": sse(*utf8, eol="\r"),
            "truncated": sse(*plain[:-2]),
            "garbage": sse(*plain[:4]) + b"this line is not SSE at all\n\n" + sse(*plain[4:]),
            "garbage_data": sse(*plain[:4])
            + b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,\n\n'
            + sse(*plain[4:]),
            "midstream_error": sse(
                *plain[:5],
                (
                    "error",
                    '{"type":"error","error":{"details":null,"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011Ce3HwQb6vtbs9LQVmh4oe"}',
                ),
            ),
            "cut_tool": sse(*cut),
        },
        "events": {
            "plain": [
                *map(T, hello),
                done(TextPart(text="Hello there!"), usage=Usage(input_tokens=11, output_tokens=6)),
            ],
            "tool_split": [
                T("I"),
                T("'ll check the current weather in Paris for you."),
                C(1, "", "toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather"),
                *[C(1, p) for p in paris if p],
                done(
                    TextPart(text="I'll check the current weather in Paris for you."),
                    ToolCallPart(
                        id="toolu_01NRLabsLyVHZPKxbKvkfSMn",
                        name="get_weather",
                        input={"location": "Paris"},
                    ),
                    stop="tool_use",
                    usage=Usage(input_tokens=377, output_tokens=65),
                ),
            ],
            "parallel": [
                *map(T, intro),
                C(1, "", "toolu_01UYxUYC2zRPY8wiutnF48eP", "add"),
                *[C(1, p) for p in add if p],
                C(2, "", "toolu_01VaRx1jpWCvPhi7L4kywAcd", "multiply"),
                *[C(2, p) for p in mul if p],
                done(
                    TextPart(text="".join(intro)),
                    ToolCallPart(
                        id="toolu_01UYxUYC2zRPY8wiutnF48eP", name="add", input={"a": 2, "b": 3}
                    ),
                    ToolCallPart(
                        id="toolu_01VaRx1jpWCvPhi7L4kywAcd", name="multiply", input={"a": 2, "b": 3}
                    ),
                    stop="tool_use",
                    usage=Usage(input_tokens=702, output_tokens=137, cached_tokens=200),
                ),
            ],
            "reasoning": [
                *[R(t) for t in thoughts if t],
                C(2, "", "toolu_01Js4AMfx5qpTLhwTusnvT68", "weather"),
                *[C(2, p) for p in location if p],
                done(
                    ReasoningPart(
                        text="".join(thoughts), signature=signature, provider="anthropic"
                    ),
                    ReasoningPart(
                        redacted="EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw",
                        provider="anthropic",
                    ),
                    ToolCallPart(
                        id="toolu_01Js4AMfx5qpTLhwTusnvT68",
                        name="weather",
                        input={"location": "Florence, Italy"},
                    ),
                    stop="tool_use",
                    usage=Usage(input_tokens=424, output_tokens=119),
                ),
            ],
            "utf8": [
                *map(T, UTF8_PIECES),
                done(
                    TextPart(text="".join(UTF8_PIECES)),
                    usage=Usage(input_tokens=9, output_tokens=7),
                ),
            ],
            "truncated": list(map(T, hello)),
            "garbage": [
                *map(T, hello),
                done(TextPart(text="Hello there!"), usage=Usage(input_tokens=11, output_tokens=6)),
            ],
            "garbage_data": [T("Hello")],
            "midstream_error": [T("Hello"), T(" there")],
            "cut_tool": [
                C(0, "", "toolu_cut", "write_file"),
                C(0, '{"path": "a.txt", "con'),
                C(0, 'tent": "\\n\\"Filing taxes'),
                "cut",
            ],
        },
        "errors": {
            "rate_limit": (
                429,
                {"retry-after": "0.02"},
                {
                    "type": "error",
                    "error": {
                        "type": "rate_limit_error",
                        "message": "This request would exceed your account's rate limit. Please try again later.",
                    },
                    "request_id": "req_011CcR9rvhfVv8bcWRaPoAGD",
                },
            ),
            "auth": (
                401,
                {},
                {
                    "type": "error",
                    "error": {
                        "type": "authentication_error",
                        "message": f"invalid x-api-key: {CANARY}",
                    },
                    "request_id": "req_01",
                },
            ),
            "overflow": (
                400,
                {},
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": "prompt is too long: 203284 tokens > 200000 maximum",
                    },
                    "request_id": "req_02",
                },
            ),
            "server": (
                500,
                {},
                {
                    "type": "error",
                    "error": {"type": "api_error", "message": "Internal server error"},
                    "request_id": "req_03",
                },
            ),
        },
        "overflow_numbers": (200000, 203284),
    }


# --- Ollama ------------------------------------------------------------------------------------------


def _ol(
    content: str = "",
    *,
    thinking: str | None = None,
    tool_calls: list[Any] | None = None,
    done: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking is not None:
        message["thinking"] = thinking
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "model": "qwen3",
        "created_at": "2025-07-07T20:22:19.184789Z",
        "message": message,
        "done": done,
        **extra,
    }


def _metrics(prompt: int, output: int, reason: str = "stop") -> dict[str, Any]:
    return {
        "done_reason": reason,
        "total_duration": 4883583458,
        "load_duration": 1334875,
        "prompt_eval_count": prompt,
        "prompt_eval_duration": 342546000,
        "eval_count": output,
        "eval_duration": 4535599000,
    }


def ollama() -> dict[str, Any]:
    words = ["The", " sky", " is", " blue", "."]
    plain = [*[_ol(w) for w in words], _ol("", done=True, **_metrics(26, 282))]
    tokyo = {
        "id": "call_k3x9a2b7",
        "function": {"index": 0, "name": "get_weather", "arguments": {"city": "Tokyo"}},
    }
    tool_split = [_ol("", tool_calls=[tokyo]), _ol("", done=True, **_metrics(169, 15))]
    files = [
        {
            "id": "call_trmym6vj",
            "function": {
                "index": 0,
                "name": "read_file_content",
                "arguments": {"file_name": "src/OllamaApiClient.java"},
            },
        },
        {
            "id": "call_24957ol8",
            "function": {
                "index": 1,
                "name": "read_file_content",
                "arguments": {"file_name": "src/OpenAiApiClient.java"},
            },
        },
    ]
    think = "The user wants me to read two Java files. Let me make both function calls now."
    parallel = [_ol("", thinking=think, tool_calls=files), _ol("", done=True, **_metrics(557, 213))]
    thoughts = ["Okay", ", the user", " wants 17 × 23."]
    reasoning = [
        *[_ol("", thinking=t) for t in thoughts],
        _ol("17 × 23 = 391"),
        _ol("", done=True, **_metrics(30, 40)),
    ]
    utf8 = [*[_ol(p) for p in UTF8_PIECES], _ol("", done=True, **_metrics(9, 7))]
    cut = [
        _ol(
            "",
            tool_calls=[
                {"function": {"name": "write_file", "arguments": '{"path": "a.txt", "con'}}
            ],
        ),
        _ol("", done=True, **_metrics(50, 16, "length")),
    ]
    return {
        "content_type": "application/x-ndjson",
        "streams": {
            "plain": ndjson(*plain),
            "tool_split": ndjson(*tool_split),
            "parallel": ndjson(*parallel),
            "reasoning": ndjson(*reasoning),
            "utf8": ndjson(*utf8),
            "truncated": ndjson(*plain[:-1]),
            "garbage": ndjson(*plain[:2]) + b"\n   \n" + ndjson(*plain[2:]),
            "garbage_data": ndjson(*plain[:2])
            + b"<html>502 Bad Gateway</html>\n"
            + ndjson(*plain[2:]),
            "midstream_error": ndjson(
                *plain[:2], {"error": "an error was encountered while running the model"}
            ),
            "cut_tool": ndjson(*cut),
        },
        "events": {
            "plain": [
                *map(T, words),
                done(
                    TextPart(text="The sky is blue."),
                    usage=Usage(input_tokens=26, output_tokens=282),
                ),
            ],
            "tool_split": [
                C(0, '{"city": "Tokyo"}', "call_k3x9a2b7", "get_weather"),
                done(
                    ToolCallPart(id="call_k3x9a2b7", name="get_weather", input={"city": "Tokyo"}),
                    stop="tool_use",
                    usage=Usage(input_tokens=169, output_tokens=15),
                ),
            ],
            "parallel": [
                R(think),
                C(
                    0,
                    '{"file_name": "src/OllamaApiClient.java"}',
                    "call_trmym6vj",
                    "read_file_content",
                ),
                C(
                    1,
                    '{"file_name": "src/OpenAiApiClient.java"}',
                    "call_24957ol8",
                    "read_file_content",
                ),
                done(
                    ReasoningPart(text=think, provider="ollama"),
                    ToolCallPart(
                        id="call_trmym6vj",
                        name="read_file_content",
                        input={"file_name": "src/OllamaApiClient.java"},
                    ),
                    ToolCallPart(
                        id="call_24957ol8",
                        name="read_file_content",
                        input={"file_name": "src/OpenAiApiClient.java"},
                    ),
                    stop="tool_use",
                    usage=Usage(input_tokens=557, output_tokens=213),
                ),
            ],
            "reasoning": [
                *map(R, thoughts),
                T("17 × 23 = 391"),
                done(
                    ReasoningPart(text="".join(thoughts), provider="ollama"),
                    TextPart(text="17 × 23 = 391"),
                    usage=Usage(input_tokens=30, output_tokens=40),
                ),
            ],
            "utf8": [
                *map(T, UTF8_PIECES),
                done(
                    TextPart(text="".join(UTF8_PIECES)),
                    usage=Usage(input_tokens=9, output_tokens=7),
                ),
            ],
            "truncated": list(map(T, words)),
            "garbage": [
                *map(T, words),
                done(
                    TextPart(text="The sky is blue."),
                    usage=Usage(input_tokens=26, output_tokens=282),
                ),
            ],
            "garbage_data": list(map(T, words[:2])),
            "midstream_error": list(map(T, words[:2])),
            "cut_tool": ["cut_call", "cut"],
        },
        "errors": {
            "rate_limit": (
                429,
                {"retry-after": "0.02"},
                {"error": "too many requests; please slow down"},
            ),
            "auth": (401, {}, {"error": f"unauthorized: invalid key {CANARY}"}),
            "overflow": (
                400,
                {},
                {
                    "error": "the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the context length in settings, or use a model with a longer context length"
                },
            ),
            "server": (500, {}, {"error": "an unexpected runner error occurred"}),
        },
        "overflow_numbers": (32768, None),
    }


def recordings(kind: str) -> dict[str, Any]:
    if kind == "gemini":
        from .recordings_gemini import gemini

        return gemini()
    return {
        "openai": openai,
        "openai-responses": responses,
        "anthropic": anthropic,
        "ollama": ollama,
    }[kind]()
