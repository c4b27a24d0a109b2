"""The one hook caller: driven by the specs, held to them, traced by pluggy; and
registration that is atomic across registries."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ketch import hookimpl, hookspecs
from ketch.commands import Command
from ketch.hooks import Hooks
from ketch.markers import CHAINED_ATTR, FAIL_CLOSED_ATTR, RETURNS_ATTR
from ketch.providers import ProviderKind
from ketch.settings import Section, SettingsSection
from ketch.testing import Harness, approve_all, call, isolated_env, text
from ketch.tools import Effect, Tool, ToolContext, ToolResult
from tests.kernel.kit import EchoInput

pytestmark = pytest.mark.minimal


def _specs() -> dict[str, Any]:
    return {
        name: fn
        for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
        if name.startswith("ketch_")
    }


def test_the_facade_agrees_with_the_specs() -> None:
    """Every typed method names its spec (``@facade``), takes exactly the spec's
    arguments in the spec's order, and the spec exists; nothing else is typed."""
    specs = _specs()
    typed = {
        name: method
        for name, method in inspect.getmembers(Hooks, inspect.isfunction)
        if hasattr(method, "__ketch_hook__")
    }
    assert typed, "the façade has no typed methods at all"
    for name, method in typed.items():
        hook = method.__ketch_hook__
        assert hook in specs, f"Hooks.{name} calls {hook}, which is not a kernel hookspec"
        spec_args = list(inspect.signature(specs[hook]).parameters)
        method_args = [p for p in inspect.signature(method).parameters if p != "self"]
        assert method_args == spec_args, f"Hooks.{name}{method_args} != {hook}{spec_args}"
    public = {
        name
        for name, member in inspect.getmembers(Hooks, inspect.isfunction)
        if not name.startswith("_")
    }
    generic = {
        "call",
        "first",
        "call_async",
        "first_async",
        "values",
        "values_async",
        "chain",
        "register",
        "implemented",
    }
    assert public - generic == set(typed), "a façade method without @facade"


def test_where_authority_is_at_stake_the_spec_fails_closed_and_types_its_answer() -> None:
    specs = _specs()
    for name in ("ketch_policy_vote", "ketch_before_tool_use", "ketch_tool_result"):
        assert callable(getattr(specs[name], FAIL_CLOSED_ATTR, None)), name
        assert getattr(specs[name], RETURNS_ATTR, ()), name
    assert getattr(specs["ketch_tool_result"], CHAINED_ATTR) == "result"


class Talkative:
    @hookimpl
    def ketch_system_prompt(self, session: Any) -> str:
        return "be brief"

    @hookimpl
    def ketch_policy_vote(self, call: Any) -> str:
        return "allow"  # not a Vote: the spec's policy makes it a deny, reported


def test_a_wrong_type_answer_is_the_spec_s_failure(tmp_path: Path) -> None:
    from tests.kernel.kit import tools_plugins

    plugins, _ = tools_plugins("allow")
    h = Harness.create(
        tmp_path,
        script=[call("echo", {"text": "x"}), text("ok")],
        plugins=[*plugins, ("talkative", Talkative())],
        bundled=["guards"],
    )
    h.run("x", approver=approve_all)
    [permission] = h.of_type("permission")
    assert permission.decision == "deny" and "talkative" in permission.reason
    assert any(
        f.plugin == "talkative" and "returned str, not Vote" in f.error
        for f in h.kernel.pm.failures
    )


def test_tracing_uses_pluggy_s_monitoring_and_tracer(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    env = {**isolated_env(tmp_path), "KETCH_TRACE_PLUGINS": "1", "PATH": os.environ["PATH"]}
    done = subprocess.run(
        [sys.executable, "-m", "ketch", "plugins"],
        cwd=tmp_path / "ws",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("ketch: trace: ")]
    # pluggy's call monitoring: the hook and the plugins implementing it ...
    assert any("ketch_register_commands" in line and "[call]" in line for line in lines), lines
    # ... and each implementation's answer, through pluggy's tracer.
    assert any("ketch_register_commands [" in line and "[impl]" in line for line in lines)


# --- registration is atomic across registries --------------------------------------------------


class Leaky(Tool):
    name = "leaky"
    description = "A tool whose plugin fails to register a provider."
    input_model = EchoInput
    effects = frozenset({Effect.READ})
    mutating = False
    ran: list[str] = []

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        Leaky.ran.append(args.text)
        return ToolResult.success("leaked")


class LeakySettings(Section):
    level: int = 1


class HalfRegistered:
    """Registers a tool, a command and a settings section, then fails on providers."""

    @hookimpl
    def ketch_register_tools(self, register: Any) -> None:
        register(Leaky())

    @hookimpl
    def ketch_register_commands(self, register: Any) -> None:
        register(Command(name="leaky", help="never kept", slash=True, slash_run=lambda ctx: None))

    @hookimpl
    def ketch_register_settings(self, register: Any) -> None:
        register(SettingsSection("leaky", LeakySettings))

    @hookimpl
    def ketch_register_providers(self, register: Any) -> None:
        register(ProviderKind(kind="leaky", create=lambda config, key: None))
        raise RuntimeError("cannot reach the licence server")


@pytest.mark.parametrize("first", ["tools", "provider_kinds"])
def test_a_plugin_failing_one_registration_keeps_nothing_anywhere(
    tmp_path: Path, first: str
) -> None:
    Leaky.ran.clear()
    h = Harness.create(
        tmp_path,
        script=[call("leaky", {"text": "x"}), text("done")],
        plugins=[("half", HalfRegistered())],
        bundled=["guards"],
        settings={"profile": "full-access"},
    )
    kernel = h.kernel
    getattr(kernel, first)  # whichever registry is built first, the end is the same
    h.run("go", approver=approve_all)
    info = kernel.pm.infos["half"]
    assert info.status == "failed" and "cannot reach the licence server" in (info.error or "")
    assert "leaky" not in kernel.tools and "leaky" not in kernel.provider_kinds
    assert "leaky" not in kernel.commands
    assert not any(s.plugin == "half" for s in kernel.settings_sections.values())
    assert info.provides == {}
    # Not offered to the model, and refused when the model calls it anyway.
    assert all(t.name != "leaky" for t in h.provider.requests[0].tools)
    [result] = h.of_type("tool_result")
    assert not result.ok and "no tool named 'leaky'" in result.output
    assert Leaky.ran == []
