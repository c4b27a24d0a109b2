"""Gemini streams: the recorded payloads of shared/reference/wire/gemini_stream.md, byte for
byte (its odd ``": "`` spacing and CRLF framing included), and streams built in the same
shape for the scenarios the reference describes without a full recording."""

from __future__ import annotations

import json
from typing import Any

from ketch.messages import ReasoningPart, TextPart, ToolCallPart, Usage

from .recordings import UTF8_PIECES, C, R, T, done, sse

EOL = "\r\n"  # the API ends every event with \r\n\r\n

PLAIN = [
    '{"candidates": [{"content": {"parts": [{"text": "1\\n2\\n3\\n4\\n5\\n6\\n7\\n8\\n9\\n10\\n11\\n12\\n13\\n1"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 18,"candidatesTokenCount": 31,"totalTokenCount": 84,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 18}],"thoughtsTokenCount": 35,"serviceTier": "standard"},"modelVersion": "gemini-2.5-flash","responseId": "ru1garvBEoOiqtsP2fznmQw"}',
    '{"candidates": [{"content": {"parts": [{"text": "4\\n15\\n16\\n17\\n18\\n19\\n20\\n21\\n22\\n23\\n24\\n25\\n26\\n27\\n28\\n29\\n3"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 18,"candidatesTokenCount": 79,"totalTokenCount": 132,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 18}],"thoughtsTokenCount": 35,"serviceTier": "standard"},"modelVersion": "gemini-2.5-flash","responseId": "ru1garvBEoOiqtsP2fznmQw"}',
    '{"candidates": [{"content": {"parts": [{"text": "0"}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 18,"candidatesTokenCount": 80,"totalTokenCount": 133,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 18}],"thoughtsTokenCount": 35,"serviceTier": "standard"},"modelVersion": "gemini-2.5-flash","responseId": "ru1garvBEoOiqtsP2fznmQw"}',
]
PLAIN_PIECES = [
    "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n1",
    "4\n15\n16\n17\n18\n19\n20\n21\n22\n23\n24\n25\n26\n27\n28\n29\n3",
    "0",
]
PLAIN_TEXT = "".join(PLAIN_PIECES)
PLAIN_USAGE = Usage(input_tokens=18, output_tokens=80 + 35, reasoning_tokens=35)

SIGNATURE = "EpwICpkIAXLI2nxlU6gsWZaZHRYkX1orzuM8vSUFwaAt1JRxEC2hJzPAcAu3PWaKz7X+PIyTTqF+ZIQPF+fQzkaRCbrxB0Qrem/xwR4S46oFxYiOF7EVa6pCBb9iu2uvCKrv5b7ezGzYqLD9glcNsLL3rA5OIsft4ec4qTT8NGd2SDdHB6WKrJ/K3rQHxoDQnB9JpnVTbtsaJoMWdFpnJcd7P7yxfdfgzO0aS6rGp+ch2yiKxsdQGan4QCdA0vCjfDcCBaxAuAVVaVSc6C7fioR1po2xPtQR/GJHzJuHKahKxN/X31DwhImJgP0WbFFCzZ8oLULvhSq3WDjEKmuSx5orPFDSud6Nr8ZN8UOn6GBkqQq3IKLdsdennT9L4HrABm3S7fpMyiuWPFhGFHPu3NAuny1UCgttcYp70Wk1tA+JefyvIHDlbrIJw+8NdDlsa0lBGEKmciCOT/b6+oZzsEQoMLzkp0R/3C/GVAIo2Jn7rYjfS9e9Kl+O2b3M0pcKW62qyjCa5oQJ/AmelBLKArd1UGJxs0YVWkoEfQnycE5lePgpATDMsYmGcHPSeiLxLq55tUPJ+xr1sHqSf87qm3Um2aNabuE+ti16GPeeWHWdQnDpEkr6sQma3BzaOeDq9n94Nrxxg/Fu2ZTFK+O2khOa3v48dDh+OVeaFKUFTL9A4ZIooRD94sEztEOvIlNexbNRWcc3MBf/bMUaJnx53Qj1p0N2FlJGBZlDmCRbiBXDM8umKyuiYA39woGI9j8gt5+M6UNfj2ot/hM8cCW86HrQEGt67+S02j4ncxHbQeBD8jSJCaN0Ah1HHQhHjV341ujEpBPF+F6JB2XtUyOHyr3hsQcuKDa27BFj2g1ojWKB/rffUc2eB0qlGBawwJQ09UnhHxjDW3qyXL/yHCXZLp8JPNBdRANLJ657TInHRksnmp7l5RxQJ0dd47pgi5VjN/08dQNsD/toXTnbcYuDcy0duEz53g4KF1cZyNuEg9kWYP1oMfOj8FrkGsyQh3+h8LQyIEvwqOrlmMjxSzJZXDbFGddHvIn5KasPKaR+T5AfxT1J3ex+pjIHoeBeAf/a8bmq3Z+gDalxa/kBIqT0KbYnAbtVk8Wq4vDZhDwYvkawPvSgFuFEhrhE8xZ3QJj7nofhWQJ+4DDVjujYlIrjBihUFvkPC2GUlrjQVNqJwhwTmZ7esjrMjx+QHtmtDNps5TZdhb1wXJ2LU2OJOYoILGhEZw0g1oeWgErSE0QUCO2EwBraenzWHlc8P2A7OGcRpE7KHdDYTuIJ9IbyeVMgeYowYXnxy7ElQ1CWkLSDHsbsptHrG9NTaRWdiAFwInb7nd1KrJVPvsNlnUfExbs8gd0IoxjaTjY1V7mjb2D/7NoL5owonoBDAXOk15QuFyU="
CALL = [
    '{"candidates": [{"content": {"parts": [{"functionCall": {"name": "get_country","args": {}},"thoughtSignature": "'
    + SIGNATURE
    + '"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 29,"candidatesTokenCount": 10,"totalTokenCount": 241,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 29}],"thoughtsTokenCount": 202},"modelVersion": "gemini-3-pro-preview","responseId": "QUVVadTSNJ6_qtsPvN7J8Q0"}',
    '{"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 29,"candidatesTokenCount": 10,"totalTokenCount": 241,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 29}],"thoughtsTokenCount": 202},"modelVersion": "gemini-3-pro-preview","responseId": "QUVVadTSNJ6_qtsPvN7J8Q0"}',
]
CALL_ID = "call_QUVVadTSNJ6_qtsPvN7J8Q0_0"  # ketch's own: the recording has no functionCall.id
ANSWER = [
    '{"candidates": [{"content": {"parts": [{"text": "The capital of Mexico"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 55,"candidatesTokenCount": 4,"totalTokenCount": 59,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 55}]},"modelVersion": "gemini-3-pro-preview","responseId": "REVVabaiCdq4qtsPnZu96Qo"}',
    '{"candidates": [{"content": {"parts": [{"text": " is Mexico City."}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 55,"candidatesTokenCount": 8,"totalTokenCount": 63,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 55}]},"modelVersion": "gemini-3-pro-preview","responseId": "REVVabaiCdq4qtsPnZu96Qo"}',
    '{"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 257,"candidatesTokenCount": 8,"totalTokenCount": 265,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 257}]},"modelVersion": "gemini-3-pro-preview","responseId": "REVVabaiCdq4qtsPnZu96Qo"}',
]
THOUGHT = "**Clarifying User Goals**\n\nI'm currently focused on defining the user's ultimate goal: ensuring their safety while crossing the street. I've pinpointed that this is a real-world scenario with significant safety considerations. However, I'm also mindful of my limitations as an AI and my inability to physically assist or visually assess the situation.\n\n\n"
THOUGHT_1 = '{"candidates": [{"content": {"parts": [{"text": "**Clarifying User Goals**\\n\\nI\'m currently focused on defining the user\'s ultimate goal: ensuring their safety while crossing the street. I\'ve pinpointed that this is a real-world scenario with significant safety considerations. However, I\'m also mindful of my limitations as an AI and my inability to physically assist or visually assess the situation.\\n\\n\\n","thought": true}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 34,"totalTokenCount": 102,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 34}],"thoughtsTokenCount": 68},"modelVersion": "gemini-2.5-pro","responseId": "beHBaJfEMIi-qtsP3769-Q8"}'
ANSWER_SIGNATURE = "CiIB0e2Kb6Syj1a961EfbWv4W5C8RgAA/hGleV9Vqm/dH8k="


def _chunk(
    parts: list[dict[str, Any]],
    *,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    response: str = "r-1",
    **extra: Any,
) -> str:
    """A response chunk in the API's own spacing (``": "`` after keys, ``,"`` between members)."""
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
    if finish:
        candidate["finishReason"] = finish
    candidate["index"] = 0
    body: dict[str, Any] = {"candidates": [candidate]}
    body["usageMetadata"] = usage or {"promptTokenCount": 9, "totalTokenCount": 9}
    body.update(extra)
    body["modelVersion"] = "gemini-2.5-flash"
    body["responseId"] = response
    return json.dumps(body, ensure_ascii=False, separators=(",", ": "))


def _usage(prompt: int, candidates: int, thoughts: int = 0, cached: int = 0) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + thoughts,
    }
    if cached:
        usage["cachedContentTokenCount"] = cached
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return usage


def stream(*payloads: str) -> bytes:
    return sse(*payloads, eol=EOL)


def gemini() -> dict[str, Any]:
    files = [
        {
            "functionCall": {"name": "read_file", "args": {"path": "a.py"}, "id": "c1"},
            "thoughtSignature": "Es8FCswF",
        },
        {"functionCall": {"name": "read_file", "args": {"path": "b.py"}, "id": "c2"}},
    ]
    parallel = [
        _chunk([files[0]], usage=_usage(83, 15, 190)),
        _chunk([files[1]], usage=_usage(83, 30, 190)),
        _chunk(
            [{"text": ""}],
            finish="STOP",
            usage=_usage(83, 30, 190),
            finishMessage="Model generated function call(s).",
        ),
    ]
    answer_parts = [
        "This is a great question! Safely crossing the street is all about being aware and predictable. Here is a step-by-step",
        " guide.",
    ]
    reasoning = [
        THOUGHT_1,
        _chunk(
            [{"text": "**Planning the steps**", "thought": True}],
            usage={"promptTokenCount": 34, "totalTokenCount": 332, "thoughtsTokenCount": 298},
        ),
        _chunk(
            [{"text": answer_parts[0], "thoughtSignature": ANSWER_SIGNATURE}],
            usage=_usage(34, 23, 787),
        ),
        _chunk([{"text": answer_parts[1]}], finish="STOP", usage=_usage(34, 25, 787, cached=20)),
    ]
    utf8 = [
        *[_chunk([{"text": p}], usage=_usage(9, i + 1)) for i, p in enumerate(UTF8_PIECES[:-1])],
        _chunk([{"text": UTF8_PIECES[-1]}], finish="STOP", usage=_usage(9, 7)),
    ]
    cut = [
        _chunk([{"text": "I'll write the file"}], usage=_usage(50, 4, 12)),
        _chunk([], finish="MAX_TOKENS", usage=_usage(50, 4, 12)),
    ]
    midstream = '{"error": {"code": 500, "message": "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting", "status": "INTERNAL"}}'
    plain_events = [*map(T, PLAIN_PIECES), done(TextPart(text=PLAIN_TEXT), usage=PLAIN_USAGE)]
    get_country = ToolCallPart(
        id=CALL_ID,
        name="get_country",
        input={},
        provider_data={"id": False, "thoughtSignature": SIGNATURE},
    )
    return {
        "content_type": "text/event-stream",
        "streams": {
            "plain": stream(*PLAIN),
            "tool_split": stream(*CALL),
            "parallel": stream(*parallel),
            "reasoning": stream(*reasoning),
            "utf8": stream(*utf8),
            "truncated": stream(*PLAIN[:2]),
            "garbage": stream(PLAIN[0]) + b": keep-alive\r\n\r\n\r\n" + stream(*PLAIN[1:]),
            "garbage_data": stream(PLAIN[0])
            + b"data: <html>502 Bad Gateway</html>\r\n\r\n"
            + stream(*PLAIN[1:]),
            "midstream_error": stream(PLAIN[0], midstream),
            "cut_tool": stream(*cut),
        },
        "events": {
            "plain": plain_events,
            "tool_split": [
                C(0, "{}", CALL_ID, "get_country"),
                done(
                    get_country,
                    stop="tool_use",
                    usage=Usage(input_tokens=29, output_tokens=10 + 202, reasoning_tokens=202),
                ),
            ],
            "parallel": [
                C(0, '{"path": "a.py"}', "c1", "read_file"),
                C(1, '{"path": "b.py"}', "c2", "read_file"),
                done(
                    ToolCallPart(
                        id="c1",
                        name="read_file",
                        input={"path": "a.py"},
                        provider_data={"id": True, "thoughtSignature": "Es8FCswF"},
                    ),
                    ToolCallPart(
                        id="c2",
                        name="read_file",
                        input={"path": "b.py"},
                        provider_data={"id": True},
                    ),
                    stop="tool_use",
                    usage=Usage(input_tokens=83, output_tokens=30 + 190, reasoning_tokens=190),
                ),
            ],
            "reasoning": [
                R(THOUGHT),
                R("**Planning the steps**"),
                *map(T, answer_parts),
                done(
                    ReasoningPart(text=THOUGHT + "**Planning the steps**", provider="gemini"),
                    TextPart(
                        text=answer_parts[0], provider_data={"thoughtSignature": ANSWER_SIGNATURE}
                    ),
                    TextPart(text=answer_parts[1]),
                    usage=Usage(
                        input_tokens=34,
                        output_tokens=25 + 787,
                        cached_tokens=20,
                        reasoning_tokens=787,
                    ),
                ),
            ],
            "utf8": [
                *map(T, UTF8_PIECES),
                done(
                    TextPart(text="".join(UTF8_PIECES)),
                    usage=Usage(input_tokens=9, output_tokens=7),
                ),
            ],
            "truncated": list(map(T, PLAIN_PIECES[:2])),
            "garbage": plain_events,
            "garbage_data": [T(PLAIN_PIECES[0])],
            "midstream_error": [T(PLAIN_PIECES[0])],
            "cut_tool": [
                T("I'll write the file"),
                done(
                    TextPart(text="I'll write the file"),
                    stop="max_tokens",
                    usage=Usage(input_tokens=50, output_tokens=16, reasoning_tokens=12),
                ),
            ],
        },
        "errors": {
            "rate_limit": (
                429,
                {},
                {
                    "error": {
                        "code": 429,
                        "message": "You exceeded your current quota, please check your plan and billing details.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10\nPlease retry in 41.2s.",
                        "status": "RESOURCE_EXHAUSTED",
                        "details": [
                            {
                                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                                "violations": [
                                    {
                                        "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                                        "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                                        "quotaDimensions": {
                                            "location": "global",
                                            "model": "gemini-2.5-flash",
                                        },
                                        "quotaValue": "10",
                                    }
                                ],
                            },
                            {
                                "@type": "type.googleapis.com/google.rpc.Help",
                                "links": [
                                    {
                                        "description": "Learn more about Gemini API quotas",
                                        "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                                    }
                                ],
                            },
                            {
                                "@type": "type.googleapis.com/google.rpc.RetryInfo",
                                "retryDelay": "0.02s",
                            },
                        ],
                    }
                },
            ),
            "auth": (
                400,
                {},
                {
                    "error": {
                        "code": 400,
                        "message": "API key not valid. Please pass a valid API key.",
                        "status": "INVALID_ARGUMENT",
                        "details": [
                            {
                                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                "reason": "API_KEY_INVALID",
                                "domain": "googleapis.com",
                                "metadata": {"service": "generativelanguage.googleapis.com"},
                            },
                            {
                                "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
                                "locale": "en-US",
                                "message": "API key not valid. Please pass a valid API key.",
                            },
                        ],
                    }
                },
            ),
            "overflow": (
                400,
                {},
                {
                    "error": {
                        "code": 400,
                        "message": "The input token count (1234567) exceeds the maximum number of tokens allowed (1048576).",
                        "status": "INVALID_ARGUMENT",
                    }
                },
            ),
            "server": (
                500,
                {},
                {
                    "error": {
                        "code": 500,
                        "message": "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
                        "status": "INTERNAL",
                    }
                },
            ),
        },
        "overflow_numbers": (1048576, 1234567),
    }
