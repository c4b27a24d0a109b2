"""The hooks the agents plugin declares (``agents_subagent_start``/``_stop``), implemented
by another plugin as ``optionalhook`` (as the user-hooks and headless plugins do)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ketch import hookimpl
from ketch.testing import Harness, call, text
from ketch.verdicts import HookVerdict
from tests.kernel.kit import tools_plugins


def make(tmp_path: Path, script: list[dict[str, Any]], *extra: tuple[str, Any]) -> Harness:
    plugins, _ = tools_plugins("allow")
    return Harness.create(tmp_path, script=script, plugins=[*plugins, *extra], bundled=["guards"])


class SubagentWatcher:
    """Implements the subagent hooks: adds context to the task, keeps it going once."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    @hookimpl(optionalhook=True)
    async def agents_subagent_start(self, session: Any, agent: Any) -> HookVerdict:
        self.calls.append(("start", session.id, agent.name))
        return HookVerdict(context="[context from a subagent_start hook]")

    @hookimpl(optionalhook=True)
    def agents_subagent_stop(self, session: Any, agent: Any, result: str) -> HookVerdict | None:
        self.calls.append(("stop", agent.id, result))
        return HookVerdict(block=True, reason="check once more") if result == "first" else None


def subagent_harness(tmp_path: Path, watcher: SubagentWatcher) -> Harness:
    import ketch_agents

    script = [
        {**call("agent", {"description": "look", "prompt": "TASK look around"}), "when": "PARENT"},
        {**text("first"), "when": "TASK"},
        {**text("second"), "when": "TASK"},
        {**text("done"), "when": "PARENT"},
    ]
    return make(tmp_path, script, ("agents", ketch_agents), ("watcher", watcher))


def test_agents_subagent_start(tmp_path: Path) -> None:
    watcher = SubagentWatcher()
    h = subagent_harness(tmp_path, watcher)
    h.run("PARENT go")
    assert watcher.calls[0] == ("start", h.session.id, "general-purpose")
    task = h.provider.requests[1].messages[0].text
    assert task.startswith("TASK look around") and "[context from a subagent_start hook]" in task


def test_agents_subagent_stop(tmp_path: Path) -> None:
    watcher = SubagentWatcher()
    h = subagent_harness(tmp_path, watcher)
    h.run("PARENT go")
    stops = [c for c in watcher.calls if c[0] == "stop"]
    started = next(e for e in h.events if e.type == "subagent")
    assert stops == [
        ("stop", started.subagent_id, "first")
    ]  # called once; its block kept the child going
    assert "check once more" in h.provider.requests[2].messages[-1].text
    assert "second" in h.provider.requests[-1].messages[-1].tool_results[0].output


def test_without_the_agents_plugin_an_optional_implementation_loads_and_is_not_called(
    tmp_path: Path,
) -> None:
    watcher = SubagentWatcher()
    h = make(tmp_path, [text("ok")], ("watcher", watcher))
    h.run("go")
    assert h.kernel.pm.infos["watcher"].status == "ok" and watcher.calls == []
