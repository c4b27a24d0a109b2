"""Seeded hostile lines for the stdio frontends' fuzzers (and ``benchmarks/fuzz_frontends.py``).

:func:`lines` yields ``(kind, bytes)`` pairs from a seed: valid messages of the frontend
(``valid`` builds those), the same messages truncated, with a field of the wrong type,
with a key dropped, nested too deep, huge, binary, not UTF-8, JSON that is not an object,
batches, control characters and escape sequences inside strings, blank lines. The same
seed always gives the same lines, so a failure is reproduced by its seed and index.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from typing import Any

Valid = Callable[[random.Random], Any]

ODD_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    2**63,
    10**400,
    1.5,
    "",
    "x" * 300,
    "\x1b]0;title\x07",
    "\u202e\u200b",
    [],
    {},
    [[[]]],
    {"a": {"b": {"c": []}}},
    "NaN",
]

KINDS = (
    "valid",
    "truncated",
    "wrong_type",
    "dropped_key",
    "extra_key",
    "deep",
    "wide",
    "huge",
    "binary",
    "not_utf8",
    "scalar",
    "batch",
    "control",
    "blank",
    "json_constant",
)


def _mutate_type(rng: random.Random, value: Any) -> Any:
    if isinstance(value, dict) and value:
        key = rng.choice(list(value))
        return {
            **value,
            key: _mutate_type(rng, value[key]) if rng.random() < 0.5 else rng.choice(ODD_VALUES),
        }
    if isinstance(value, list) and value:
        index = rng.randrange(len(value))
        copy = list(value)
        copy[index] = _mutate_type(rng, copy[index])
        return copy
    return rng.choice(ODD_VALUES)


def _drop_key(rng: random.Random, value: Any) -> Any:
    if isinstance(value, dict) and value:
        key = rng.choice(list(value))
        if isinstance(value[key], dict) and value[key] and rng.random() < 0.5:
            return {**value, key: _drop_key(rng, value[key])}
        return {k: v for k, v in value.items() if k != key}
    return value


def _deep(rng: random.Random) -> bytes:
    depth = rng.choice([130, 1_000, 20_000, 100_000])
    opener, closer = rng.choice([(b"[", b"]"), (b'{"a":', b"}")])
    middle = b"1" if opener != b"[" else b""
    balanced = rng.random() < 0.8
    return opener * depth + middle + (closer * depth if balanced else b"")


def line(rng: random.Random, kind: str, valid: Valid, huge: int) -> bytes:
    """One line of ``kind`` (without its newline)."""
    message = valid(rng)
    text = json.dumps(message)
    if kind == "valid":
        return text.encode()
    if kind == "truncated":
        return text[: rng.randrange(1, max(2, len(text)))].encode()
    if kind == "wrong_type":
        return json.dumps(_mutate_type(rng, message)).encode()
    if kind == "dropped_key":
        return json.dumps(_drop_key(rng, message)).encode()
    if kind == "extra_key":
        if isinstance(message, dict):
            message = {**message, rng.choice(["_meta", "zz", "id", "type"]): rng.choice(ODD_VALUES)}
        return json.dumps(message).encode()
    if kind == "deep":
        return _deep(rng)
    if kind == "wide":
        return json.dumps(
            [rng.choice(ODD_VALUES[:9]) for _ in range(rng.randrange(100, 3000))]
        ).encode()
    if kind == "huge":
        filler = "a" * rng.randrange(huge // 2, huge)
        if isinstance(message, dict):
            return json.dumps({**message, "pad": filler}).encode()
        return json.dumps(filler).encode()
    if kind == "binary":
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))).replace(b"\n", b"")
    if kind == "not_utf8":
        raw = text.encode()
        cut = rng.randrange(len(raw))
        return raw[:cut] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xfe\xfe"]) + raw[cut:]
    if kind == "scalar":
        return rng.choice([b"null", b"42", b'"hi"', b"true", b"-0.5e9", b"[]", b"{}", b'""'])
    if kind == "batch":
        return json.dumps(
            [valid(rng) for _ in range(rng.randrange(0, 4))] + [rng.choice(ODD_VALUES)]
        ).encode()
    if kind == "control":
        return (
            text.replace('"', '"\x1b[2J\\u0000\\u202e', 1).encode()
            if rng.random() < 0.5
            else (text[:-1] + ', "x": "\\u001b]52;c;ZXZpbA==\\u0007"}').encode()
        )
    if kind == "blank":
        return rng.choice([b"", b"   ", b"\t", b"\r"])
    if kind == "json_constant":
        return text.replace("1", "NaN", 1).encode() if "1" in text else b"Infinity"
    raise ValueError(kind)


def lines(
    seed: int,
    count: int,
    valid: Valid,
    *,
    huge: int = 1 << 20,
    weights: dict[str, float] | None = None,
) -> Iterator[tuple[str, bytes]]:
    """``count`` lines from ``seed``: ``(kind, line)``."""
    rng = random.Random(seed)
    chosen = weights or {}
    kinds = list(KINDS)
    odds = [chosen.get(kind, 0.2 if kind in ("huge", "deep") else 1.0) for kind in kinds]
    for _ in range(count):
        kind = rng.choices(kinds, odds)[0]
        yield kind, line(rng, kind, valid, huge)
