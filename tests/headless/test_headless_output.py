"""What headless runs print about a turn: ``json``'s session id and cost, and the
``stream-json`` ``turn_end`` line with the turn's usage totals (Claude Code's names)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ketch_headless.meter import TurnMeter
from tests.headless.headless_kit import Headless, events, of

pytestmark = pytest.mark.timeout(120)


def test_json_output_names_the_session_and_shows_no_made_up_cost(headless: Headless) -> None:
    headless.script([{"text": "42", "usage": {"input_tokens": 7, "output_tokens": 3}}])
    proc = headless.run("-p", "answer", "--output-format", "json")
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["session_id"].startswith("ses_") and payload["text"] == "42"
    assert payload["usage"] == {"input_tokens": 7, "output_tokens": 3, "cache_read_input_tokens": 0}
    assert payload["cost_usd"] is None  # the scripted model has no price: null, never a guess
    assert payload["total_cost_usd"] is None
    # Claude Code's result fields, beside ketch's own
    assert payload["type"] == "result" and payload["subtype"] == "success"
    assert payload["result"] == "42" and payload["is_error"] is False
    assert payload["num_turns"] == 1 and isinstance(payload["duration_ms"], int)
    assert payload["permission_denials"] == []


def test_the_turn_end_line_carries_the_turns_usage_totals(headless: Headless) -> None:
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
    end = out[-1]
    assert (
        end["type"] == "turn_end" and end["text"] == "found it"
    )  # ketch's own event, last, names unchanged
    assert (end["input_tokens"], end["output_tokens"], end["stop_reason"]) == (250, 50, "end_turn")
    assert end["usage"] == {
        "input_tokens": 250,
        "output_tokens": 50,
        "cache_read_input_tokens": 150,
    }
    assert end["subtype"] == "success" and end["is_error"] is False and end["num_turns"] == 2
    assert end["session_id"] == of(out, "session")[0]["session_id"]
    assert (
        end["permission_denials"] == [] and "total_cost_usd" not in end and end["duration_ms"] >= 0
    )


def test_a_failed_turn_is_an_error_turn_end(headless: Headless) -> None:
    headless.script([{"error": {"kind": "auth", "message": "bad key", "retryable": False}}])
    proc = headless.run("-p", "hi", "--output-format", "stream-json")
    assert proc.returncode == 1
    end = events(proc.stdout)[-1]
    assert end["type"] == "turn_end" and end["is_error"] is True
    assert end["subtype"] == "error_during_execution" and end["stop_reason"] == "error"


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
    """The turn's cost is turn_end's own figure (None when a response had no price:
    a partial sum of usage events would pass for the whole); the session total adds
    the turns up."""
    meter = TurnMeter()
    meter(SimpleNamespace(type="usage", cached_tokens=0, cost_usd=0.01))
    first = meter.totals(_end(cost_usd=0.03), meter.finish(_end(cost_usd=0.03)))  # type: ignore[arg-type]
    assert first["cost_usd"] == pytest.approx(0.03) and first["total_cost_usd"] == pytest.approx(
        0.03
    )
    meter.start()
    second = meter.totals(_end(cost_usd=0.5), meter.finish(_end(cost_usd=0.5)))  # type: ignore[arg-type]
    assert second["cost_usd"] == pytest.approx(0.5) and second["total_cost_usd"] == pytest.approx(
        0.53
    )
    meter.start()
    unknown = meter.totals(_end(cost_usd=None), meter.finish(_end(cost_usd=None)))  # type: ignore[arg-type]
    assert "cost_usd" not in unknown and unknown["total_cost_usd"] == pytest.approx(0.53)


def test_stream_json_carries_a_running_commands_output(headless: Headless) -> None:
    # Issue 26: live output reaches -p stream-json consumers as it happens.
    command = "echo out-1; sleep 0.6; echo out-2"
    headless.script(
        [{"tool_calls": [{"name": "shell", "input": {"command": command}}]}, {"text": "done"}]
    )
    proc = headless.run(
        "-p", "run it", "--output-format", "stream-json", "--profile", "full-access"
    )
    assert proc.returncode == 0, proc.stderr
    out = events(proc.stdout)
    live = of(out, "tool_output")
    (result,) = of(out, "tool_result")
    assert live and all(e["tool_call_id"] == result["tool_call_id"] for e in live)
    assert "out-1" in live[0]["text"] and live[0]["ts"] < result["ts"]
    assert out.index(live[-1]) < out.index(result)


def test_stream_json_carries_the_task_list(headless: Headless) -> None:
    # Issue 26: the todo tool's list is a stream-json event of its own.
    todos = [
        {"content": "Write the test", "status": "completed"},
        {"content": "Fix the bug", "status": "in_progress", "active_form": "Fixing the bug"},
    ]
    headless.script([{"tool_calls": [{"name": "todo", "input": {"todos": todos}}]}, {"text": "ok"}])
    proc = headless.run("-p", "plan it", "--output-format", "stream-json")
    assert proc.returncode == 0, proc.stderr
    (event,) = of(events(proc.stdout), "todo")
    assert [(t["content"], t["status"]) for t in event["todos"]] == [
        ("Write the test", "completed"),
        ("Fix the bug", "in_progress"),
    ]
    assert event["todos"][1]["active_form"] == "Fixing the bug"
