"""The ketch_repeats plugin refuses a loop of identical calls (``ketch_refuse_call``); the
breaker's turns with it loaded are in tests/kernel/test_kernel_loop.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ketch.testing import Harness, call, text
from tests.kernel.kit import Echo, tools_plugins

SAME = call("echo", {"text": "again"})


def harness(tmp_path: Path, script: list[dict[str, Any]], *bundled: str, **kw: Any) -> Harness:
    Echo.runs.clear()
    plugins, _ = tools_plugins("allow")
    return Harness.create(tmp_path, script=script, plugins=plugins, bundled=list(bundled), **kw)


def test_the_limit_is_the_loop_setting(tmp_path: Path) -> None:
    script = [SAME, SAME, SAME, text("ok")]
    settings = {"loop": {"duplicate_call_limit": 2}}
    h = harness(tmp_path, script, "guards", "repeats", settings=settings)
    h.run("spin")
    assert Echo.runs == ["again"]
    outs = h.of_type("tool_result")
    assert [r.ok for r in outs] == [True, False, False]
    assert "exact call 2 times in a row" in outs[1].output


def test_each_turn_starts_a_new_streak(tmp_path: Path) -> None:
    h = harness(tmp_path, [SAME, SAME, text("one"), SAME, SAME, text("two")], "guards", "repeats")
    h.run("first")
    h.run("second")
    assert Echo.runs == ["again"] * 4  # 2 + 2, under the limit of 3 in each turn


def test_without_the_plugin_identical_calls_go_to_the_votes(tmp_path: Path) -> None:
    h = harness(tmp_path, [SAME, SAME, SAME, SAME, text("ok")], "guards")
    h.run("spin")
    assert Echo.runs == ["again"] * 4
    assert all(r.ok for r in h.of_type("tool_result"))
