"""What headless runs print about a turn: ``json``'s session id and cost, and the
``stream-json`` ``result`` line with the turn's usage totals."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ketch_headless.meter import TurnMeter
from tests.headless.headless_kit import Headless, events, of

pytestmark = pytest.mark.timeout(120)


def test_json_output_names_the_session_and_leaves_out_an_unknown_cost(headless: Headless) -> None:
    headless.script([{"text": "42", "usage": {"input_tokens": 7, "output_tokens": 3}}])
    proc = headless.run("-p", "answer", "--output-format", "json")
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["session_id"].startswith("ses_") and payload["text"] == "42"
    assert payload["usage"] == {"input_tokens": 7, "output_tokens": 3}
    assert "cost_usd" not in payload  # the scripted model has no price


def test_the_result_line_carries_the_turns_usage_totals(headless: Headless) -> None:
    headless.script(
        [
            {
                "text": "looking",
                "tool_calls": [{"name": "list_dir", "input": {"path": "."}}],
                "usage": {"input_tokens": 100, "output_tokens": 20, "cached_tokens": 60},
            },
            {
                "text": "found it",
                "usage": {"input_tokens": 150, "output_tokens": 30, "cached_tokens": 90},
            },
        ]
    )
    proc = headless.run("-p", "look", "--output-format", "stream-json")
    assert proc.returncode == 0, proc.stderr
    out = events(proc.stdout)
    assert out[-1]["type"] == "result"  # the last line, after ketch's own turn_end
    assert out[-2]["type"] == "turn_end"
    result = out[-1]
    assert (
        result["subtype"] == "success"
        and result["is_error"] is False
        and result["result"] == "found it"
    )
    assert result["usage"] == {
        "input_tokens": 250,
        "output_tokens": 50,
        "cache_read_input_tokens": 150,
    }
    assert result["num_turns"] == 2 and result["session_id"] == of(out, "session")[0]["session_id"]
    assert result["permission_denials"] == [] and "total_cost_usd" not in result


def test_a_failed_turn_is_an_error_result(headless: Headless) -> None:
    headless.script([{"error": {"kind": "auth", "message": "bad key", "retryable": False}}])
    proc = headless.run("-p", "hi", "--output-format", "stream-json")
    assert proc.returncode == 1
    result = events(proc.stdout)[-1]
    assert result["type"] == "result" and result["is_error"] is True
    assert result["subtype"] == "error_during_execution" and result["stop_reason"] == "error"


def _end(**extra: object) -> SimpleNamespace:
    return SimpleNamespace(
        type="turn_end",
        text="",
        stop_reason="end_turn",
        input_tokens=1,
        output_tokens=1,
        iterations=1,
        **extra,
    )


def test_cost_appears_when_the_provider_prices_the_model() -> None:
    meter = TurnMeter()
    session = SimpleNamespace(id="ses_x", model="m")
    meter(SimpleNamespace(type="usage", cached_tokens=0, cost_usd=0.01))
    meter(SimpleNamespace(type="usage", cached_tokens=0, cost_usd=0.02))
    first = meter.result(_end(), session, meter.finish(_end()))
    assert first["cost_usd"] == pytest.approx(0.03) and first["total_cost_usd"] == pytest.approx(
        0.03
    )
    meter.start()
    second = meter.result(
        _end(cost_usd=0.5), session, meter.finish(_end(cost_usd=0.5))
    )  # turn_end's own figure wins
    assert second["cost_usd"] == pytest.approx(0.5) and second["total_cost_usd"] == pytest.approx(
        0.53
    )
