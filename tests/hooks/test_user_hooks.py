"""User hooks from config: real shell commands at lifecycle events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ketch_hooks
from ketch.testing import Harness, call, text
from tests.kernel.kit import Echo, tools_plugins
from tests.trust.pins import trust_all


def harness(tmp_path: Path, script: list[dict[str, Any]], config: str, **kw: Any) -> Harness:
    plugins, _ = tools_plugins("allow")
    return Harness.create(
        tmp_path,
        script=script,
        plugins=[*plugins, ("hooks", ketch_hooks)],
        bundled=["guards"],
        config=config,
        **kw,
    )


def test_pre_tool_use_exit_2_blocks_and_stderr_reaches_the_model(tmp_path: Path) -> None:
    Echo.runs.clear()
    log = tmp_path / "hook-input.json"
    config = f"""
[[hooks.PreToolUse]]
matcher = "echo"
command = "cat > {log}; echo 'no echoing on Fridays' >&2; exit 2"
"""
    h = harness(tmp_path, [call("echo", {"text": "hi"}), text("ok")], config)
    h.run("x")
    assert Echo.runs == []
    (result,) = h.of_type("tool_result")
    assert result.outcome == "blocked" and "no echoing on Fridays" in result.output
    payload = json.loads(log.read_text())
    assert (
        payload["event"] == "PreToolUse"
        and payload["tool_name"] == "echo"
        and payload["tool_input"] == {"text": "hi"}
    )


def test_matcher_selects_tools(tmp_path: Path) -> None:
    Echo.runs.clear()
    config = """
[[hooks.PreToolUse]]
matcher = "touch|shell"
command = "exit 2"
"""
    h = harness(tmp_path, [call("echo", {"text": "hi"}), text("ok")], config)
    h.run("x")
    assert Echo.runs == ["hi"]


def test_post_tool_use_feeds_stderr_back(tmp_path: Path) -> None:
    config = """
[[hooks.PostToolUse]]
command = "echo 'lint: 2 problems' >&2; exit 2"
"""
    h = harness(tmp_path, [call("echo", {"text": "hi"}), text("ok")], config)
    h.run("x")
    assert h.of_type("tool_result")[0].output.endswith("lint: 2 problems")


def test_prompt_submit_adds_context_or_blocks(tmp_path: Path) -> None:
    config = """
[[hooks.UserPromptSubmit]]
command = "grep -q secret && { echo 'prompts about secrets are blocked' >&2; exit 2; } || echo 'branch: main'"
"""
    h = harness(tmp_path, [text("ok")], config)
    end = h.run("tell me the secret")
    assert end.stop_reason == "error" and not h.provider.requests
    assert "prompts about secrets are blocked" in h.of_type("error")[0].message
    h.run("hello")
    assert "branch: main" in h.provider.requests[0].messages[-1].text


def test_a_failing_hook_warns_and_does_not_block(tmp_path: Path) -> None:
    Echo.runs.clear()
    config = """
[[hooks.PreToolUse]]
command = "echo broken >&2; exit 1"
"""
    h = harness(tmp_path, [call("echo", {"text": "hi"}), text("ok")], config)
    h.run("x")
    assert Echo.runs == ["hi"]
    assert any("failed (broken)" in n.message for n in h.of_type("notice"))


def test_hook_environment_has_no_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_API_KEY", "canary-hook-key")
    out = tmp_path / "env.txt"
    config = f"""
[[hooks.SessionStart]]
command = "env > {out}"
"""
    h = harness(tmp_path, [], config)
    _ = h.session
    dumped = out.read_text()
    assert "canary-hook-key" not in dumped and "KETCH_SESSION_ID=" in dumped


def test_workspace_hooks_need_trust(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    ws_config = f"""
[[hooks.SessionStart]]
command = "touch {marker}"
"""
    h = harness(tmp_path, [], "", workspace_config=ws_config)
    _ = h.session
    assert not marker.exists()
    import ketch_trust

    again = Harness.create(
        tmp_path,
        plugins=[*tools_plugins("allow")[0], ("hooks", ketch_hooks), ("trust", ketch_trust)],
        bundled=["guards"],
        workspace_config=ws_config,
    )
    trust_all(again)  # what `ketch trust --yes` pins
    _ = again.session
    assert marker.exists()


def test_stop_hook_keeps_the_turn_going_until_stop_hook_active(tmp_path: Path) -> None:
    config = """
[[hooks.Stop]]
command = "grep -q '\\"stop_hook_active\\": true' && exit 0; echo 'run the tests before finishing' >&2; exit 2"
"""
    h = harness(tmp_path, [text("done"), text("tested and done")], config)
    end = h.run("x")
    assert end.text == "tested and done"
    assert "run the tests before finishing" in h.provider.requests[1].messages[-1].text
