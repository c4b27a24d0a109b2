"""Effective capacity, the meter, the estimator and its calibration, the window's source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ketch.messages import Message
from ketch.testing import ScriptedProvider, call, text
from ketch_context_kit.budget import (
    RequestSize,
    TokenEstimator,
    calibrate,
    context_budget,
    context_state,
    effective_capacity,
    estimator_for,
    plausible,
    utilization,
)
from ketch_context_kit.meter import band
from ketch_context_kit.turns import split_turns
from tests.context.kit_context import harness


@pytest.mark.parametrize(
    ("raw", "reserve", "expected"),
    [
        (128_000, None, 128_000 - 10_240 - 2_560),  # 8% and 2% win
        (128_000, 32_000, 128_000 - 32_000 - 2_560),  # a large output reserve wins
        (8_000, None, 8_000 - 640 - 2_048),  # the 2,048 floor wins
        (200_000, 4_096, 200_000 - 16_000 - 4_000),
    ],
)
def test_effective_capacity(raw: int, reserve: int | None, expected: int) -> None:
    assert effective_capacity(raw, reserve) == expected


def test_bands_and_utilization() -> None:
    assert [band(u) for u in (0.0, 0.6999, 0.70, 0.8499, 0.85, 0.9499, 0.95, 1.0)] == [
        "green",
        "green",
        "amber",
        "amber",
        "orange",
        "orange",
        "red",
        "red",
    ]
    assert utilization(50, 100) == 0.5
    assert utilization(500, 100) == 1.0 and utilization(-1, 100) == 0.0


def test_estimator_weights_non_ascii_text() -> None:
    estimator = TokenEstimator()
    assert estimator.text("a" * 400) == 100
    assert estimator.text("漢" * 100) == 100  # about a token per CJK character
    assert estimator.text("é" * 400) > estimator.text("e" * 400)
    m = Message.user("x" * 40)
    assert estimator.message(m) == 10 + 4


def test_calibration_learns_only_from_plausible_reports(tmp_path: Path) -> None:
    h = harness(tmp_path, [])
    session = h.session
    size = RequestSize(units=30_000, overhead=100, tokens=7_600)
    assert not calibrate(session, size, 10)  # the scripted default, far too small: ignored
    assert not calibrate(session, size, 100_000)  # far too large: ignored
    assert estimator_for(session).chars_per_token == 4.0
    for _ in range(8):
        assert calibrate(session, size, 10_100)  # 3 characters per token
    assert abs(estimator_for(session).chars_per_token - 3.0) < 0.1
    assert context_state(session)["samples"] == 8
    assert plausible(size, 10_100) and not plausible(size, 0)


class Counting(ScriptedProvider):
    """Reports input tokens as a tokenizer with 3 characters per token would."""

    async def stream(self, request: Any) -> Any:
        size = TokenEstimator().request(
            request.system, [t.model_dump() for t in request.tools], request.messages
        )
        if self.script:
            self.script[0]["usage"] = {
                "input_tokens": int(size.units / 3) + size.overhead,
                "output_tokens": 7,
            }
        async for item in super().stream(request):
            yield item


def test_usage_event_uses_plausible_reports_and_calibrates(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("a" * 400), text("b" * 400)])
    h.provider.__class__ = Counting
    h.run("x" * 3000)
    h.run("y" * 3000)
    usage = h.of_type("usage")[-1]
    capacity = context_budget(h.session).capacity
    assert usage.effective_capacity == capacity
    estimator = estimator_for(h.session)
    assert estimator.chars_per_token < 3.6  # moved from 4 toward 3
    expected = usage.input_tokens + estimator.message(h.session.transcript[-1])
    assert usage.context_tokens == expected
    assert usage.context_utilization == pytest.approx(expected / capacity)


def test_usage_event_estimates_when_the_report_is_implausible(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("a" * 400)])
    h.run("x" * 3000)  # the scripted provider reports 10 input tokens
    usage = h.of_type("usage")[-1]
    request = h.provider.requests[-1]
    sent = (
        TokenEstimator()
        .request(request.system, [t.model_dump() for t in request.tools], request.messages)
        .tokens
    )
    assert usage.input_tokens == 10
    assert usage.context_tokens == sent + TokenEstimator().message(h.session.transcript[-1])
    assert estimator_for(h.session).chars_per_token == 4.0


def test_window_precedence(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("ok"), text("ok")])
    session = h.session
    assert context_budget(session).source == "default"
    h.provider.config.context_window = None
    original = h.provider.context_window

    async def reported() -> int:
        return 32_000

    h.provider.context_window = reported  # type: ignore[method-assign]
    h.run("hi")
    budget = context_budget(session)
    assert (budget.window, budget.source) == (32_000, "provider")
    h.provider.context_window = original  # type: ignore[method-assign]
    h.provider.config.context_window = 16_000  # config.toml overrides what the provider reports
    assert (context_budget(session).window, context_budget(session).source) == (16_000, "config")
    session.context_window = 9_000
    assert context_budget(session).source == "session"
    assert h.of_type("usage")[-1].effective_capacity == effective_capacity(32_000)


def test_configured_window_from_config_toml(tmp_path: Path) -> None:
    config = '[providers.scripted]\nkind = "scripted"\ncontext_window = 20000\nmax_output_tokens = 4000\n'
    h = harness(tmp_path, [text("ok")], config=config)
    h.provider.config = h.kernel.provider_config("scripted")[0]
    budget = context_budget(h.session)
    assert (budget.window, budget.reserve, budget.capacity) == (
        20_000,
        4_000,
        20_000 - 4_000 - 2_048,
    )


def test_turns_never_split_a_call_from_its_result(tmp_path: Path) -> None:
    h = harness(
        tmp_path,
        [call("read_blob", {"name": "a", "size": 10}), text("done"), text("two")],
        tools=True,
    )
    from ketch.testing import approve_all

    h.run("one", approver=approve_all)
    h.run("two")
    spans = split_turns(h.session.transcript)
    assert [len(s) for s in spans] == [4, 2]
    assert [s.number for s in spans] == [-1, -1]  # prompts, numbers unknown without the transcript
