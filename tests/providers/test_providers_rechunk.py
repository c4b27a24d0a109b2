"""Property: however the bytes of a recorded stream are cut into reads (down to single
bytes), each provider's decoder produces the same events, and fails the same way."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .kit import decode_chunks, split_at
from .recordings import KINDS, recordings

SCENARIOS = [
    "plain",
    "tool_split",
    "parallel",
    "reasoning",
    "utf8",
    "garbage",
    "garbage_data",
    "truncated",
    "midstream_error",
    "cut_tool",
]


def outcome(kind: str, chunks: list[bytes]) -> tuple[list, str | None]:
    rec = recordings(kind)
    events, error = asyncio.run(decode_chunks(kind, chunks, rec["content_type"].partition(";")[0]))
    # Call ids a provider invents (for servers that send none) are random: number them
    # in order of appearance, so runs compare by structure.
    names: dict[str, str] = {}

    def rename(call_id: str | None) -> str | None:
        return names.setdefault(call_id, f"id{len(names)}") if call_id else call_id

    dumped = []
    for event in events:
        data = event.model_dump()
        if data["kind"] == "tool_call_delta":
            data["id"] = rename(data["id"])
        elif data["kind"] == "completed":
            for part in data["message"]["parts"]:
                if part["type"] == "tool_call":
                    part["id"] = rename(part["id"])
        dumped.append(data)
    return dumped, (error.kind.value if error else None)


def reference(kind: str, scenario: str) -> tuple[list, str | None]:
    return outcome(kind, [recordings(kind)["streams"][scenario]])


@pytest.mark.parametrize("kind", KINDS)
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_rechunking_gives_the_same_events(kind: str, data: st.DataObject) -> None:
    scenario = data.draw(st.sampled_from(SCENARIOS), label="scenario")
    body = recordings(kind)["streams"][scenario]
    cuts = data.draw(
        st.sets(st.integers(min_value=1, max_value=len(body) - 1), max_size=max(1, len(body) // 3)),
        label="cuts",
    )
    assert outcome(kind, split_at(body, cuts)) == reference(kind, scenario)


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("kind", KINDS)
def test_single_byte_reads_give_the_same_events(kind: str, scenario: str) -> None:
    body = recordings(kind)["streams"][scenario]
    expected = reference(kind, scenario)
    assert expected[0], "the scenario produces events"
    assert outcome(kind, [body[i : i + 1] for i in range(len(body))]) == expected
