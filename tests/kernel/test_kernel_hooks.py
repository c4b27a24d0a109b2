"""Every hook, exercised through the kernel. A meta-test keeps this file and the docs in
step with hookspecs.py: each hook needs a ``test_hook_<name>`` here and a mention in docs/.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from ketch import hookimpl, hookspec, hookspecs
from ketch.errors import KetchError
from ketch.markers import fail_closed
from ketch.messages import Message
from ketch.prompt import PromptPart
from ketch.providers import ProviderRequest
from ketch.testing import Harness, approve_all, call, calls, deny_all, error, text
from ketch.verdicts import HookVerdict
from tests.kernel.kit import tools_plugins

pytestmark = pytest.mark.minimal
ROOT = Path(__file__).resolve().parents[2]


def hook_names() -> list[str]:
    return sorted(
        name
        for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
        if name.startswith("ketch_")
    )


def test_every_hook_has_a_test_and_docs() -> None:
    here = Path(__file__).read_text()
    docs = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").rglob("*.md"))
    missing_tests = [h for h in hook_names() if f"def test_hook_{h}(" not in here]
    missing_docs = [h for h in hook_names() if not re.search(rf"\b{h}\b", docs)]
    undocumented = [h for h in hook_names() if not (getattr(hookspecs, h).__doc__ or "").strip()]
    assert not missing_tests, f"hooks without a test_hook_<name> in {__file__}: {missing_tests}"
    assert not missing_docs, f"hooks not documented under docs/: {missing_docs}"
    assert not undocumented, f"hookspecs without a docstring: {undocumented}"


class Recorder:
    """Implements every lifecycle hook and records each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    @hookimpl
    def ketch_session_start(self, session: Any) -> None:
        self.calls.append(("session_start", session.id))

    @hookimpl
    def ketch_session_end(self, session: Any, reason: str) -> None:
        self.calls.append(("session_end", reason))

    @hookimpl
    def ketch_event(self, session: Any, event: Any) -> None:
        self.calls.append(("event", event.type))

    @hookimpl
    def ketch_after_tool_use(self, call: Any, result: Any) -> str:
        self.calls.append(("after_tool_use", call.tool))
        return "note: lint passed"

    @hookimpl
    def ketch_before_tool_use(self, call: Any) -> HookVerdict | None:
        self.calls.append(("before_tool_use", call.tool))
        if call.input.get("text") == "blocked":
            return HookVerdict(block=True, reason="the hook says no")
        return None


def make(
    tmp_path: Path, script: list[dict[str, Any]], *extra: tuple[str, Any], **kw: Any
) -> Harness:
    plugins, _ = tools_plugins("allow")
    kw.setdefault("bundled", ["guards"])
    return Harness.create(tmp_path, script=script, plugins=[*plugins, *extra], **kw)


# --- registration -------------------------------------------------------------------------


def test_hook_ketch_register_providers(tmp_path: Path) -> None:
    h = make(tmp_path, [])
    assert "scripted" in h.kernel.provider_kinds
    assert h.kernel.pm.infos["scripted"].provides["providers"] == ["scripted"]


def test_hook_ketch_register_tools(tmp_path: Path) -> None:
    h = make(tmp_path, [])
    assert {"echo", "touch"} <= set(h.kernel.tools)
    assert h.kernel.tools["echo"].plugin == "testtools"


def test_hook_ketch_cached_registrations(tmp_path: Path) -> None:
    """An answered plugin is not called, and what was answered for it is registered as
    its own; an answer for a plugin not being called is dropped; a failing answer (or
    none) leaves every implementation called."""
    from ketch.tools import Tool

    class StandIn(Tool):
        name = "echo"
        description = "a stand-in"

    asked: list[tuple[str, list[str]]] = []

    class Cache:
        @hookimpl
        def ketch_cached_registrations(
            self, hook: str, plugins: list[str]
        ) -> dict[str, list[Any]] | None:
            asked.append((hook, list(plugins)))
            if hook != "ketch_register_tools":
                return None
            return {"testtools": [StandIn()], "nobody": [StandIn()]}

    h = make(tmp_path, [], ("cache", Cache()))
    tools = h.kernel.tools
    assert isinstance(tools["echo"], StandIn) and tools["echo"].plugin == "testtools"
    assert "touch" not in tools  # testtools' own hook was not called
    assert ("ketch_register_tools", ["testtools"]) in [
        (hook, [p for p in plugins if p == "testtools"]) for hook, plugins in asked
    ]
    assert h.kernel.pm.infos["testtools"].provides["tools"] == ["echo"]

    class Broken:
        @hookimpl
        def ketch_cached_registrations(self) -> dict[str, list[Any]]:
            raise RuntimeError("the cache is broken")

    h = make(tmp_path / "broken", [], ("cache", Broken()))
    assert {"echo", "touch"} <= set(h.kernel.tools)
    assert not isinstance(h.kernel.tools["echo"], StandIn)


class Functions:
    """Registers a plain typed function (and a Tool): the function needs ketch_tool_from."""

    @hookimpl
    def ketch_register_tools(self, register: Any) -> None:
        from ketch.tools import Effect, tool

        @tool(effects={Effect.READ})
        def shout(text: str, times: int = 1) -> str:
            """Upper-case the text.

            Args:
                text: what to shout
                times: how many times
            """
            return " ".join([text.upper()] * times)

        register(shout)


def test_hook_ketch_tool_from(tmp_path: Path) -> None:
    """The essential function_tools plugin makes a typed function a tool (schema from its
    signature and docstring, effects from ``@tool``) that runs, under an allow-list that
    does not name it; with no plugin to answer, the registering plugin fails with a
    one-line reason and keeps nothing; an implementation that raises fails the
    registering plugin with its error."""
    script = [call("shout", {"text": "hi", "times": 2}), text("ok")]
    h = make(tmp_path, script, ("functions", Functions()), bundled=["guards"])
    assert h.kernel.pm.infos["function_tools"].status == "ok"
    shout = h.kernel.tools["shout"]
    assert shout.plugin == "functions" and shout.description == "Upper-case the text."
    assert shout.mutating is False
    schema = shout.input_schema()
    assert schema["properties"]["text"]["description"] == "what to shout"
    assert schema["required"] == ["text"]
    h.run("x")
    assert h.of_type("tool_result")[0].output == "HI HI"
    # ketch.api.as_tool: the same, given the kernel's hooks to ask (and a clear error without)
    from ketch.api import as_tool

    def whisper(text: str) -> str:
        """Lower-case the text."""
        return text.lower()

    made = as_tool(whisper, h.kernel.hooks)
    assert made.name == "whisper" and made.mutating is True
    assert made.input_schema()["required"] == ["text"]
    with pytest.raises(TypeError, match=r"as_tool\(obj, kernel.hooks\)"):
        as_tool(whisper)

    h = make(tmp_path / "off", [], ("functions", Functions()), bundled=False)
    assert "shout" not in h.kernel.tools and "echo" in h.kernel.tools
    info = h.kernel.pm.infos["functions"]
    assert info.status == "failed"
    assert "no loaded plugin makes a function a tool" in (info.error or "")

    class Refuses:
        @hookimpl(tryfirst=True)
        def ketch_tool_from(self, obj: Any) -> Any:
            raise ValueError("not this one")

    h = make(tmp_path / "refused", [], ("functions", Functions()), ("refuses", Refuses()))
    assert "shout" not in h.kernel.tools
    assert "ValueError: not this one" in (h.kernel.pm.infos["functions"].error or "")


def test_hook_ketch_register_frontends(tmp_path: Path) -> None:
    from ketch.frontends import Frontend

    class P:
        @hookimpl
        def ketch_register_frontends(self, register: Any) -> None:
            register(Frontend(name="web-ui", run=lambda kernel: 0))

    h = make(tmp_path, [], ("webui", P()))
    assert h.kernel.frontends["web-ui"].plugin == "webui"


def test_hook_ketch_register_commands(tmp_path: Path) -> None:
    from ketch.cli import build_parser
    from ketch.commands import Command

    class P:
        @hookimpl
        def ketch_register_commands(self, register: Any) -> None:
            register(Command(name="hello", help="say hello", cli=True, run=lambda kernel, args: 7))

    h = make(tmp_path, [], ("hello", P()))
    args = build_parser(h.kernel).parse_args(["hello"])
    assert args._command == "hello" and h.kernel.commands["hello"].run(h.kernel, args) == 7  # type: ignore[misc]


def test_hook_ketch_add_cli_options(tmp_path: Path) -> None:
    from ketch.cli import build_parser

    class P:
        @hookimpl
        def ketch_add_cli_options(self, parser: argparse.ArgumentParser) -> None:
            parser.add_argument("--colour", default="none")

    h = make(tmp_path, [], ("opts", P()))
    assert build_parser(h.kernel).parse_args(["--colour", "red"]).colour == "red"


def test_hook_ketch_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ketch.cli import build_parser

    seen: list[tuple[list[str], str]] = []

    class P:
        @hookimpl
        def ketch_usage_error(self, parser: Any, args: list[str], message: str) -> str:
            seen.append((args, message))
            return "that is not an option here"

    h = make(tmp_path, [], ("hints", P()))
    with pytest.raises(SystemExit) as exited:
        build_parser(h.kernel).parse_args(["--colour"])
    assert exited.value.code == 2
    assert seen and seen[0][0] == ["--colour"] and "unrecognized" in seen[0][1]
    assert capsys.readouterr().err.splitlines()[0] == "ketch: that is not an option here"


def test_hook_ketch_register_settings(tmp_path: Path) -> None:
    from pydantic import Field

    from ketch.settings import Section, SettingsSection

    class Colours(Section):
        colour: str = "none"
        depth: int = Field(1, ge=1)

    class P:
        @hookimpl
        def ketch_register_settings(self, register: Any) -> None:
            register(SettingsSection("paint", Colours, workspace_safe={"colour"}))

    config = 'model = "m"\n[paint]\ncolour = "red"\ndepth = 3\n'
    h = make(
        tmp_path / "a",
        [],
        ("paint", P()),
        config=config,
        workspace_config='[paint]\ncolour = "blue"\ndepth = 9\n',
    )
    paint = h.kernel.settings.of(Colours)
    # typed; the workspace set its safe key (colour), not the other one (depth)
    assert isinstance(paint, Colours) and paint.colour == "blue" and paint.depth == 3
    assert h.kernel.settings.paint is paint and h.kernel.settings.section("paint") == {
        "colour": "blue",
        "depth": 3,
    }
    assert any(
        "paint.depth" in n and "until you trust" in n for n in h.kernel.loaded_settings.notices
    )
    bad = make(
        tmp_path / "b", [], ("paint", P()), config='model = "kept"\n[paint]\ndepth = "deep"\n'
    )
    assert bad.kernel.settings.model == "kept" and bad.kernel.settings.of(Colours).depth == 1
    (problem,) = [n for n in bad.kernel.loaded_settings.notices if "paint" in n]
    assert ":3: paint.depth:" in problem and "ignoring [paint]" in problem


def test_hook_ketch_register_modes(tmp_path: Path) -> None:
    from ketch.cli import build_parser
    from ketch.modes import Mode

    class P:
        @hookimpl
        def ketch_register_modes(self, register: Any) -> None:
            register(Mode("look", "read-only", read_only=True))
            register(Mode("work", "everything", default=True))

    h = make(
        tmp_path,
        [call("touch", {"path": "x"}), text("ok")],
        ("modes", P()),
        settings={"mode": "look"},
    )
    assert set(h.kernel.modes) == {"look", "work"} and h.kernel.default_mode() == "work"
    assert build_parser(h.kernel).parse_args(["--mode", "look"]).mode == "look"
    h.run("x", approver=approve_all)
    assert "touch" not in [t.name for t in h.provider.requests[0].tools]  # offered: none mutating
    (result,) = h.of_type("tool_result")
    assert (
        result.outcome == "refused"
        and "look mode" in result.output
        and not (h.workspace / "x").exists()
    )
    with pytest.raises(KetchError, match="unknown mode 'plan'; known modes: look, work"):
        h.session.set_mode("plan")


def test_hook_ketch_register_profiles(tmp_path: Path) -> None:
    from ketch.cli import build_parser
    from ketch.modes import Profile

    class P:
        @hookimpl
        def ketch_register_profiles(self, register: Any) -> None:
            register(Profile("careful", "asks", default=True))
            register(Profile("bold", "does not"))

    h = make(tmp_path, [], ("profiles", P()))
    assert h.session.profile == "careful" and h.session.snapshot().profile == "careful"
    assert build_parser(h.kernel).parse_args(["--profile", "bold"]).profile == "bold"
    h.session.set_profile("bold")
    assert h.session.snapshot().profile == "bold"
    with pytest.raises(KetchError, match="unknown profile 'reckless'"):
        h.session.set_profile("reckless")


def test_hook_ketch_permission_rules(tmp_path: Path) -> None:
    class P:
        @hookimpl
        def ketch_permission_rules(self, session: Any) -> dict[str, list[str]]:
            return {"allow": ["echo(*)"], "deny": ["touch(secret)"]}

    class Q:
        @hookimpl
        def ketch_permission_rules(self, session: Any) -> dict[str, list[str]]:
            return {"ask": ["touch(*)"]}

    plugins, voter = tools_plugins("allow")
    h = Harness.create(
        tmp_path,
        script=[call("echo", {"text": "x"}), text("ok")],
        plugins=[*plugins, ("p", P()), ("q", Q())],
        bundled=["guards"],
    )
    h.run("x")
    rules = voter.snapshots[0].rules
    assert (
        rules["allow"] == ("echo(*)",)
        and rules["deny"] == ("touch(secret)",)
        and rules["ask"] == ("touch(*)",)
    )


def test_hook_ketch_permission_facts(tmp_path: Path) -> None:
    """Facts are taken with the snapshot, once per step, and frozen for it: a plugin that
    changes its answer mid-step changes the next step's snapshot, not this one's."""
    taken: list[int] = []

    class P:
        @hookimpl
        def ketch_permission_facts(self, session: Any) -> dict[str, Any]:
            taken.append(len(taken))
            return {"snapshot": taken[-1]}

    class Q:
        @hookimpl
        def ketch_permission_facts(self, session: Any) -> str:
            return "not a dict"  # the wrong type: reported, contributes nothing

    plugins, voter = tools_plugins("allow")
    h = Harness.create(
        tmp_path,
        script=[calls(("echo", {"text": "a"}), ("echo", {"text": "b"})), text("ok")],
        plugins=[*plugins, ("p", P()), ("q", Q())],
        bundled=["guards"],
    )
    h.run("x")
    first, second = (s.facts for s in voter.snapshots)
    assert first == second and first["snapshot"] in taken and len(taken) >= 2
    assert any(f.plugin == "q" and "not dict" in f.error for f in h.kernel.pm.failures)


def test_hook_ketch_notification(tmp_path: Path) -> None:
    order: list[str] = []

    class P:
        @hookimpl
        async def ketch_notification(self, session: Any, message: str, kind: str) -> None:
            order.append(f"notification:{kind}:{message}")

    async def approver(request: Any) -> Any:
        order.append("asked")
        return await approve_all(request)

    plugins, _ = tools_plugins("ask")
    h = Harness.create(
        tmp_path,
        script=[call("echo", {"text": "x"}), text("ok")],
        plugins=[*plugins, ("n", P())],
        bundled=["guards"],
    )
    h.run("x", approver=approver)
    assert order == ["notification:permission:ketch needs your permission to use echo", "asked"]


# --- configuration -------------------------------------------------------------------------------


def test_hook_ketch_configure(tmp_path: Path) -> None:
    seen: list[Any] = []

    class P:
        @hookimpl
        def ketch_configure(self, kernel: Any) -> None:
            seen.append(kernel)

    h = make(tmp_path, [], ("cfg", P()))
    h.kernel.configure()
    h.kernel.configure()
    assert seen == [h.kernel]


def test_hook_ketch_workspace_setting(tmp_path: Path) -> None:
    """Asked per held-back value; its answer is what applies (narrowed, here)."""
    asked: list[tuple[tuple[str, ...], Any]] = []

    class P:
        @hookimpl
        def ketch_workspace_setting(self, key: tuple[str, ...], value: Any) -> Any:
            asked.append((key, value))
            if key == ("profile",):
                return value
            if key == ("plugins",):
                return {"disable": value["disable"][:1]}
            return None

    config = 'profile = "assisted"\nmodel = "m"\n[plugins]\ndisable = ["a", "b"]\n[extra]\nx = 1\n'
    h = make(tmp_path, [], ("admit", P()), workspace_config=config)
    settings = h.kernel.settings
    assert settings.profile == "assisted" and settings.model == "m"
    assert settings.plugins.disable == ["a"]  # narrowed: only what the hook gave back
    assert "extra" not in (settings.model_extra or {})
    assert sorted(k for k, _ in asked) == [("extra",), ("plugins",), ("profile",)]  # model: safe
    layer = next(lay for lay in h.kernel.layers if lay.name == "workspace")
    assert sorted(layer.ignored) == ["extra", "plugins"]  # partly or not at all applied
    untrusted = make(tmp_path / "other", [], workspace_config='profile = "assisted"\n')
    assert untrusted.kernel.settings.profile is None  # no answer: not applied


def test_hook_ketch_workspace_config(tmp_path: Path) -> None:
    """Its answer is what of the workspace's config applies; with none, nothing does."""
    seen: list[tuple[dict[str, Any], bool]] = []

    class P:
        @hookimpl(tryfirst=True)  # before the essential workspace_settings plugin's answer
        def ketch_workspace_config(
            self, data: dict[str, Any], sections: list[Any], admit: bool
        ) -> Any:
            seen.append((data, admit))
            return {"model": data["model"]}, [(("profile",), data["profile"])], ["profile"]

    config = 'profile = "assisted"\nmodel = "m"\n'
    h = make(tmp_path, [], ("split", P()), workspace_config=config)
    assert h.kernel.settings.model == "m" and h.kernel.settings.profile is None
    assert seen == [({"profile": "assisted", "model": "m"}, True)]
    layer = next(lay for lay in h.kernel.layers if lay.name == "workspace")
    assert layer.ignored == ["profile"] and layer.held == [(("profile",), "assisted")]
    assert any("ignored profile until you trust" in n for n in h.kernel.notices)
    none = make(tmp_path / "none", [], workspace_config=config, bundled=False)
    assert none.kernel.settings.model != "m" and none.kernel.settings.profile is None
    assert any("ignoring this file" in n for n in none.kernel.notices)


def test_hook_ketch_get_credential(tmp_path: Path) -> None:
    class P:
        @hookimpl
        def ketch_get_credential(self, provider: str, kind: str) -> str | None:
            return "from-keyring" if provider == "scripted" else None

    h = make(tmp_path, [], ("creds", P()))
    config, kind = h.kernel.provider_config("scripted", "m")
    assert h.kernel.api_key(config, kind).reveal() == "from-keyring"
    kind.env_key = "SCRIPTED_KEY"
    h.kernel.environ["SCRIPTED_KEY"] = "from-env"
    assert h.kernel.api_key(config, kind).reveal() == "from-env"
    assert "from-env" not in repr(h.kernel.api_key(config, kind))


def test_hook_ketch_resolve_provider(tmp_path: Path) -> None:
    """A plugin answers which provider to build; the managed allow-lists still hold
    whatever it answers; with no plugin to answer nothing is built (one line)."""
    from ketch.providers import ProviderConfig

    class Resolver:
        @hookimpl
        def ketch_resolve_provider(
            self, kernel: Any, provider: str | None, model: str | None
        ) -> Any:
            kind = kernel.provider_kinds["scripted"]
            return ProviderConfig(name="mine", kind="scripted", model=model or "chosen"), kind

    h = make(tmp_path, [], ("resolver", Resolver()))
    config, kind = h.kernel.provider_config()
    assert (config.name, kind.kind, config.model) == ("mine", "scripted", "chosen")

    managed = tmp_path / "managed.toml"
    managed.write_text('allowed_models = ["scripted-*"]\n', encoding="utf-8")
    env = {"KETCH_MANAGED_FILE": str(managed)}
    fenced = make(tmp_path / "fenced", [], ("resolver", Resolver()), env=env)
    with pytest.raises(KetchError, match="model 'chosen' is not allowed by the managed policy"):
        fenced.kernel.provider_config()
    assert fenced.kernel.provider_config(model="scripted-2")[0].model == "scripted-2"

    # The essential provider_setup plugin answers by default ...
    assert make(tmp_path / "default", []).kernel.provider_config()[0].name == "scripted"
    # ... and with no plugin at all (an embedder's bare kernel) nothing is built.
    bare = make(tmp_path / "bare", [], bundled=False)
    with pytest.raises(KetchError, match="no plugin resolves the model provider"):
        bare.kernel.provider_config()


def test_hook_ketch_model_info(tmp_path: Path) -> None:
    from ketch.messages import ImagePart, TextPart
    from ketch.providers import ModelInfo

    class Catalog:
        @hookimpl
        def ketch_model_info(self, provider_kind: str, model: str) -> ModelInfo | None:
            if (provider_kind, model) == ("scripted", "scripted-model"):
                return ModelInfo(id=model, context_window=50_000, images=False, source="test")
            return None

    h = make(
        tmp_path,
        [text("ok", usage={"input_tokens": 1000, "output_tokens": 100})],
        ("cat", Catalog()),
        bundled=["guards", "budget"],  # the budget reads the catalog
    )
    session = h.session
    session.append(
        Message(
            role="user",
            parts=(
                TextPart(text="see"),
                ImagePart(media_type="image/png", data=b"\x89PNG\r\n\x1a\n"),
            ),
        )
    )
    end = h.run("x")
    (usage,) = h.of_type("usage")
    assert end.stop_reason == "end_turn"
    # the catalog's window, before the provider reports one
    assert 0 < usage.effective_capacity < 50_000
    assert not h.provider.requests[0].messages[0].images  # a text-only model gets no image
    assert any("does not take images" in n.message for n in h.of_type("notice"))
    assert (
        h.kernel.hooks.first(
            "ketch_model_info", provider_kind="scripted", model="other", kernel=h.kernel
        )
        is None
    )


# --- policy --------------------------------------------------------------------------------------------


def test_hook_ketch_policy_vote(tmp_path: Path) -> None:
    plugins, voter = tools_plugins("deny")
    h = Harness.create(
        tmp_path,
        script=[call("echo", {"text": "x"}), text("ok")],
        plugins=plugins,
        bundled=["guards"],
    )
    h.run("x", approver=approve_all)
    assert voter.calls[0].tool == "echo" and h.of_type("permission")[0].decision == "deny"


# --- context ------------------------------------------------------------------------------------


def test_hook_ketch_refuse_call(tmp_path: Path) -> None:
    from tests.kernel.kit import Echo

    Echo.runs.clear()
    seen: list[str] = []

    class P:
        @hookimpl
        def ketch_refuse_call(self, call: Any, tool: Any, turn: Any) -> str | None:
            seen.append(call.input["text"])
            return "[test] not this one" if call.input["text"] == "no" else None

    script = [calls(("echo", {"text": "no"}), ("echo", {"text": "yes"})), text("ok")]
    h = make(tmp_path, script, ("refuse", P()))
    h.run("x")
    assert seen == ["no", "yes"] and Echo.runs == ["yes"]
    refused, ran = h.of_type("tool_result")
    assert not refused.ok and refused.output == "[test] not this one" and ran.ok
    assert [e.tool_call_id for e in h.of_type("permission")] == [ran.tool_call_id]  # never voted on


def test_hook_ketch_run_calls(tmp_path: Path) -> None:
    from tests.kernel.kit import Echo

    class P:
        @hookimpl
        async def ketch_run_calls(self, session: Any, calls: Any, decide: Any, finish: Any) -> bool:
            decided = [await decide(c) for c in calls]  # decided in order...
            for c, d in reversed(list(zip(calls, decided, strict=True))):
                await finish(c, d)  # ...run in the plugin's order
            return True

    Echo.runs.clear()
    script = [calls(("echo", {"text": "a"}), ("echo", {"text": "b"})), text("ok")]
    h = make(tmp_path / "runs", script, ("runner", P()))
    h.run("x")
    assert Echo.runs == ["b", "a"]
    parts = h.provider.requests[-1].messages[-1].parts
    assert [p.output for p in parts] == ["a", "b"]  # back to the model in call order

    class Broken:
        @hookimpl
        async def ketch_run_calls(self, session: Any, calls: Any, decide: Any, finish: Any) -> bool:
            await finish(calls[0], await decide(calls[0]))
            raise RuntimeError("runner bug")

    Echo.runs.clear()
    script = [calls(("echo", {"text": "a"}), ("echo", {"text": "b"})), text("ok")]
    h = make(tmp_path / "broken", script, ("runner", Broken()))
    h.run("x")
    assert Echo.runs == ["a", "b"]  # the kernel ran the call it left, once, alone
    assert [e.ok for e in h.of_type("tool_result")] == [True, True]


def test_a_run_calls_plugin_cannot_run_a_call_the_kernel_did_not_decide(tmp_path: Path) -> None:
    """``finish`` runs only the Ready ``decide`` handed out for that call in this step:
    a forged one (for a call the policy denied), a copy, or one used twice is refused and
    never runs. Judged by effect: the canary files are not written."""
    import dataclasses

    from ketch.calls import Ready
    from ketch.policy import ProposedCall
    from ketch.tools import Effect, ToolContext
    from tests.kernel.kit import TouchInput, tools_plugins

    class Forger:
        @hookimpl
        async def ketch_run_calls(self, session: Any, calls: Any, decide: Any, finish: Any) -> bool:
            denied, copied, twice = calls
            assert not isinstance(await decide(denied), Ready)  # the policy said no
            tool = session.kernel.tools["touch"]
            forged = Ready(
                call=denied,
                tool=tool,
                args=TouchInput(path="forged"),
                ctx=ToolContext(
                    workspace=session.workspace,
                    session_id=session.id,
                    settings=session.kernel.settings,
                    state={},
                    authorize=lambda access: asyncio.sleep(0, True),
                ),
                proposed=ProposedCall(
                    id=denied.id,
                    tool="touch",
                    input={"path": "forged"},
                    effects=frozenset({Effect.WRITE}),
                    mutating=True,
                ),
            )
            await finish(denied, forged)
            allowed = await decide(copied)
            await finish(copied, dataclasses.replace(allowed))  # equal, not the same
            once = await decide(twice)
            await finish(twice, once)
            await finish(twice, once)  # a second run of one decision
            return True

    plugins, _ = tools_plugins("allow", per_tool={"touch": "deny"})
    script = [
        calls(
            ("touch", {"path": "denied"}), ("echo", {"text": "copy"}), ("echo", {"text": "twice"})
        ),
        text("ok"),
    ]
    from tests.kernel.kit import Echo

    Echo.runs.clear()
    h = Harness.create(
        tmp_path, script=script, plugins=[*plugins, ("forger", Forger())], bundled=["guards"]
    )
    h.run("x")
    assert not (h.workspace / "forged").exists() and not (h.workspace / "denied").exists()
    assert Echo.runs == ["twice"]  # the copy never ran; the real decision ran once
    denied, copied, *twice = h.of_type("tool_result")
    assert (denied.outcome, copied.outcome) == ("refused", "refused")
    assert "did not decide this call" in denied.output and "did not decide" in copied.output
    assert [r.outcome for r in twice] == ["succeeded", "refused"]


def test_hook_ketch_system_prompt(tmp_path: Path) -> None:
    class P:
        @hookimpl
        def ketch_system_prompt(self, session: Any) -> list[Any]:
            return [
                PromptPart(text="second", order=200),
                "last",
                PromptPart(text="first", title="Env", order=100),
            ]

    h = make(tmp_path, [text("ok")], ("sys", P()))
    h.run("x")
    system = h.provider.requests[0].system
    assert system.index("# Env\n\nfirst") < system.index("second") < system.index("last")


def test_hook_ketch_build_request(tmp_path: Path) -> None:
    """Without a plugin the request carries the whole active context; a plugin's request
    is sent as it built it; one that raises ContextOverflow ends the turn before any
    request; after an overflow error, None ends the turn with the provider's error."""
    h = make(tmp_path / "plain", [text("a"), text("b")])
    h.run("first")
    h.run("second")
    assert [m.text for m in h.provider.requests[-1].messages] == ["first", "a", "second"]

    class Builder:
        def __init__(self) -> None:
            self.calls: list[tuple[list[str], int | None]] = []

        @hookimpl
        async def ketch_build_request(
            self, session: Any, tools: list[Any], overflow: int | None
        ) -> ProviderRequest | None:
            self.calls.append(([t.name for t in tools], overflow))
            if overflow is not None:
                return None
            return ProviderRequest(model=session.model, system="mine", messages=session.active[-1:])

    builder = Builder()
    script = [text("a"), error("context_length", "too long", context_limit=5000), text("b")]
    h = make(tmp_path / "built", script, ("builder", builder))
    h.run("first")
    assert h.provider.requests[-1].system == "mine"
    assert [m.text for m in h.provider.requests[-1].messages] == ["first"]
    end = h.run("second")
    assert end.stop_reason == "context_overflow" and len(h.provider.requests) == 2
    assert [overflow for _, overflow in builder.calls] == [None, None, 5000]
    assert "echo" in builder.calls[0][0]  # the tools offered

    class Refuser:
        @hookimpl
        def ketch_build_request(self) -> None:
            from ketch.errors import ContextOverflow

            raise ContextOverflow("too big: the refuser says so")

    h = make(tmp_path / "refused", [text("never")], ("refuser", Refuser()))
    end = h.run("x")
    assert end.stop_reason == "context_overflow" and not h.provider.requests
    assert any("the refuser says so" in n.message for n in h.of_type("notice"))


def test_hook_ketch_response_usage(tmp_path: Path) -> None:
    """The meter's fields come from the plugin; without one they are 0."""
    h = make(tmp_path / "none", [text("a")])
    h.run("x")
    assert h.of_type("usage")[-1].context_utilization == 0.0

    class Meter:
        @hookimpl
        def ketch_response_usage(self, usage: Any, message: Any) -> dict[str, Any]:
            return {"context_utilization": 0.5, "context_tokens": 7, "effective_capacity": 14}

    h = make(tmp_path / "meter", [text("a")], ("meter", Meter()))
    h.run("x")
    usage = h.of_type("usage")[-1]
    assert (usage.context_utilization, usage.context_tokens, usage.effective_capacity) == (
        0.5,
        7,
        14,
    )


def test_hook_ketch_retry_delay(tmp_path: Path) -> None:
    seen: list[tuple[str, int]] = []

    class P:
        @hookimpl
        def ketch_retry_delay(self, session: Any, error: Any, retried: tuple[Any, ...]) -> Any:
            seen.append((error.message, len(retried)))
            return 0.01 if len(retried) < 2 else None

    busy = [error("overloaded", f"busy {n}", retryable=True) for n in range(4)]
    h = make(tmp_path, [*busy, text("never")], ("retry", P()))
    end = h.run("x")
    assert end.stop_reason == "error" and len(h.provider.requests) == 3
    assert seen == [("busy 0", 0), ("busy 1", 1), ("busy 2", 2)]  # asked after each failure
    assert [e.retry_in for e in h.of_type("error")] == [0.01, 0.01, None]
    assert [e.attempt for e in h.of_type("retry")] == [1, 2]


def test_hook_ketch_event_fields(tmp_path: Path) -> None:
    class Meter:
        @hookimpl
        def ketch_event_fields(self, event: Any) -> dict[str, Any]:
            # A field of its own is added; one the event already has is never replaced.
            return {"metered": event.type, "input_tokens": -1}

    h = make(tmp_path, [text("ok", usage={"input_tokens": 10, "output_tokens": 2})], ("m", Meter()))
    end = h.run("x")
    (usage,) = h.of_type("usage")
    assert usage.metered == "usage" and usage.input_tokens == 10
    assert end.metered == "turn_end" and '"metered":"turn_end"' in end.model_dump_json()


def test_hook_ketch_register_events(tmp_path: Path) -> None:
    from typing import Literal

    from ketch.events import Event, parse_event

    class Pinged(Event):
        type: Literal["pinged"] = "pinged"
        target: str

    class Pinger:
        @hookimpl
        def ketch_register_events(self, register: Any) -> None:
            register(Pinged)

        @hookimpl
        def ketch_session_start(self, session: Any) -> None:
            session.kernel.emit(session, Pinged(target="here"))

    h = make(tmp_path, [text("ok")], ("pinger", Pinger()))
    h.run("x")
    assert h.kernel.events["pinged"] is Pinged and "message" in h.kernel.events
    assert h.kernel.pm.infos["pinger"].provides["events"] == ["pinged"]
    [pinged] = h.of_type("pinged")
    data = pinged.model_dump(mode="json")
    assert isinstance(parse_event(data, h.kernel.events), Pinged)
    # Without the plugin that defines it, an event is still read back, every field kept.
    unknown = parse_event(data, {})
    assert type(unknown) is Event and unknown.type == "pinged" and unknown.target == "here"


# --- storage -------------------------------------------------------------------------------------


class FakeCipher:
    algorithm = "test"

    def encrypt(self, plaintext: bytes, aad: bytes) -> bytes:
        return plaintext[::-1]

    def decrypt(self, envelope: bytes, aad: bytes) -> bytes:
        return envelope[::-1]

    def index(self, value: str) -> str:
        return "i" + value


class StorePlugin:
    def __init__(self) -> None:
        self.opened_with: list[Any] = []

    @hookimpl
    def ketch_field_cipher(self, settings: Any) -> FakeCipher:
        return FakeCipher()

    @hookimpl
    def ketch_open_store(self, settings: Any, cipher: Any) -> Any:
        self.opened_with.append(cipher)
        return {"store": True}


def test_hook_ketch_open_store(tmp_path: Path) -> None:
    # The store plugin keeps the store (ketch_session_store): it opens whichever store
    # answers ketch_open_store first, once.
    plugin = StorePlugin()
    h = make(tmp_path, [], ("fakestore", plugin), bundled=["guards", "store"])
    assert h.kernel.store == {"store": True}
    assert h.kernel.store == {"store": True}  # opened once
    assert len(plugin.opened_with) == 1


def test_hook_ketch_field_cipher(tmp_path: Path) -> None:
    plugin = StorePlugin()
    h = make(tmp_path, [], ("fakestore", plugin), bundled=["guards", "store"])
    _ = h.kernel.store
    assert isinstance(plugin.opened_with[0], FakeCipher)


class KeptStore:
    """Answers ketch_session_store and ketch_resume_record as the test sets them."""

    def __init__(self, answer: Any = None, record: Any = None) -> None:
        self.answer = answer
        self.record = record
        self.asked: list[Any] = []

    @hookimpl
    def ketch_session_store(self, kernel: Any) -> Any:
        self.asked.append(kernel)
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer

    @hookimpl
    def ketch_resume_record(self, kernel: Any, session_id: str | None) -> Any:
        self.asked.append(session_id)
        if isinstance(self.record, BaseException):
            raise self.record
        return self.record


def test_hook_ketch_session_store(tmp_path: Path) -> None:
    from ketch.storage import StoreUnavailable

    assert make(tmp_path / "none", []).kernel.store is None  # no plugin keeps one
    kept = KeptStore({"store": True})
    h = make(tmp_path / "kept", [], ("kept", kept))
    assert h.kernel.store == {"store": True}
    assert kept.asked == [h.kernel]  # asked at every use: the keeper opens once
    refused = KeptStore(StoreUnavailable("the keyring is locked; unlock it", exists=True))
    h = make(tmp_path / "refused", [], ("refused", refused))
    for _ in range(2):  # raised again at every use
        with pytest.raises(StoreUnavailable, match="keyring is locked"):
            _ = h.kernel.store
    # A keeper that fails otherwise is a store that cannot be opened, never "no store".
    h = make(tmp_path / "broken", [], ("broken", KeptStore(RuntimeError("boom"))))
    with pytest.raises(StoreUnavailable, match="could not be opened.*boom") as failed:
        _ = h.kernel.store
    assert failed.value.exists


def test_hook_ketch_resume_record(tmp_path: Path) -> None:
    from ketch.storage import SessionRecord

    first = make(tmp_path / "kept", [text("again")])
    transcript = (Message.user("before"), Message.assistant("answered"))
    record = SessionRecord(
        id="s-1", workspace=str(first.kernel.workspace), mode="default", transcript=transcript
    )
    kept = KeptStore(record=record)
    h = make(tmp_path / "kept", [text("again")], ("kept", kept))
    session = h.resume(None)
    assert kept.asked == [None]  # None: this workspace's latest
    assert session.id == "s-1" and session.resumed
    assert [m.text for m in session.transcript] == ["before", "answered"]
    # A refusal (another workspace, no session) propagates; a keeper that fails refuses.
    refusing = KeptStore(record=KetchError("session s-1 belongs to workspace /elsewhere"))
    with pytest.raises(KetchError, match="belongs to workspace"):
        make(tmp_path / "refusing", [], ("refusing", refusing)).resume("s-1")
    broken = KeptStore(record=RuntimeError("boom"))
    with pytest.raises(KetchError, match="cannot resume: broken failed"):
        make(tmp_path / "broken", [], ("broken", broken)).resume("s-1")
    with pytest.raises(KetchError, match="no session store is loaded"):
        make(tmp_path / "none", []).resume("s-1")


def test_hook_ketch_request_started(tmp_path: Path) -> None:
    class Started:
        def __init__(self) -> None:
            self.sessions: list[Any] = []

        @hookimpl
        def ketch_request_started(self, session: Any) -> None:
            self.sessions.append(session)

    started = Started()
    h = make(tmp_path, [call("echo", {"text": "x"}), text("done")], ("started", started))
    h.run("go")
    assert started.sessions == [h.session, h.session]  # once per model request


def test_hook_ketch_watch_stream(tmp_path: Path) -> None:
    from ketch.providers import ErrorKind, ProviderError

    seen: list[str] = []
    closed: list[str] = []

    class Watch:
        def __init__(self, stall: bool) -> None:
            self.stall = stall

        @hookimpl
        def ketch_watch_stream(self, provider: Any, stream: Any, emit: Any) -> Any:
            async def watched() -> Any:
                try:
                    async for item in stream:
                        seen.append(type(item).__name__)
                        if self.stall:
                            raise ProviderError(ErrorKind.NETWORK, "stalled, says the watcher")
                        yield item
                finally:
                    closed.append(provider.name)  # closed when the response ends

            return watched()

    h = make(tmp_path, [text("hello")], ("watch", Watch(stall=False)))
    assert h.run("x").text == "hello"
    assert "TextDelta" in seen and "Completed" in seen and len(closed) == 1
    h = make(tmp_path, [text("never")], ("watch", Watch(stall=True)))
    end = h.run("x")
    assert end.stop_reason == "error" and len(closed) == 2
    assert [e.message for e in h.of_type("error")] == ["stalled, says the watcher"]


def test_hook_ketch_answer_cut_off(tmp_path: Path) -> None:
    limits: list[Any] = []

    class Cut:
        @hookimpl
        def ketch_answer_cut_off(self, session: Any, limit: int | None) -> str:
            limits.append(limit)
            return "go on, please"

    cut = {"text": "the first half", "stop_reason": "max_tokens"}
    h = make(tmp_path, [cut, text("the rest")], ("cut", Cut()))
    end = h.run("x")
    assert end.text == "the rest" and len(limits) == 1
    sent = h.provider.requests[1].messages
    assert sent[-1].text == "go on, please" and sent[-1].synthetic
    assert sent[-2].text == "the first half"
    h = make(tmp_path, [cut, text("never")])  # nobody answers: the turn ends as it stands
    assert h.run("x").text == "the first half" and len(h.provider.requests) == 1


def test_hook_ketch_turn_interrupted(tmp_path: Path) -> None:
    partials: list[str] = []

    class Kept:
        @hookimpl
        def ketch_turn_interrupted(self, session: Any, partial: str) -> None:
            partials.append(partial)
            session.append(Message.user("[interrupted]", synthetic=True))

    slow = {"text": "ab", "chunks": ["a", "b"], "chunk_delay": 30}
    h = make(tmp_path, [slow, text("ok")], ("kept", Kept()))

    async def cancelled() -> Any:
        task = asyncio.create_task(h.turn("go"))
        while not h.of_type("text_delta"):
            await asyncio.sleep(0.01)
        task.cancel()
        return await asyncio.wait_for(task, 5)

    end = asyncio.run(cancelled())
    assert end.stop_reason == "cancelled" and partials == ["a"]
    assert h.session.transcript[-1].text == "[interrupted]"


# --- lifecycle ------------------------------------------------------------------------------------


def test_hook_ketch_session_start(tmp_path: Path) -> None:
    rec = Recorder()
    h = make(tmp_path, [], ("rec", rec))
    assert ("session_start", h.session.id) in rec.calls


def test_hook_ketch_session_end(tmp_path: Path) -> None:
    rec = Recorder()
    h = make(tmp_path, [], ("rec", rec))
    h.kernel.end(h.session, "exit")
    assert rec.calls[-1] == ("session_end", "exit")


def test_hook_ketch_user_prompt_submit(tmp_path: Path) -> None:
    class P:
        @hookimpl
        def ketch_user_prompt_submit(self, session: Any, prompt: str) -> HookVerdict:
            return HookVerdict(context=f"[the prompt had {len(prompt)} characters]")

    h = make(tmp_path, [text("ok")], ("ups", P()))
    h.run("hello")
    assert "[the prompt had 5 characters]" in h.provider.requests[0].messages[-1].text


def test_hook_ketch_expand_prompt(tmp_path: Path) -> None:
    from ketch.messages import TextPart

    class P:
        @hookimpl
        async def ketch_expand_prompt(self, session: Any, prompt: str, intake: Any) -> list[Any]:
            assert intake.has_tool("echo") and not intake.has_tool("nope")
            result = await intake.call_tool(
                "echo", {"text": prompt.upper()}
            )  # through the policy, journaled
            intake.notice("attached one thing")
            return [TextPart(text=f"[attached: {result.output}]")]

    h = make(tmp_path, [text("ok")], ("expand", P()))
    h.run("hello")
    sent = h.provider.requests[0].messages[-1]
    assert [p.text for p in sent.parts] == ["hello", "[attached: HELLO]"]
    assert (
        h.of_type("tool_call")[0].name == "echo" and h.of_type("permission")[0].decision == "allow"
    )
    assert h.of_type("tool_result")[0].ok and "attached one thing" in [
        e.message for e in h.of_type("notice")
    ]
    assert h.of_type("user_prompt")[0].text == "hello"  # the typed prompt, as typed


def test_hook_ketch_before_tool_use(tmp_path: Path) -> None:
    rec = Recorder()
    h = make(tmp_path, [call("echo", {"text": "blocked"}), text("ok")], ("rec", rec))
    h.run("x")
    (result,) = h.of_type("tool_result")
    assert not result.ok and result.outcome == "blocked" and "the hook says no" in result.output
    assert "tool_started" not in h.types()  # never dispatched


class Decider:
    """A before-tool-use hook that answers ``decision`` (and may rewrite the input)."""

    def __init__(self, decision: str | None, updated: dict[str, Any] | None = None) -> None:
        self.decision, self.updated = decision, updated
        self.seen: list[str] = []

    @hookimpl
    async def ketch_before_tool_use(self, call: Any, decision: str) -> HookVerdict:
        self.seen.append(decision)
        return HookVerdict(
            decision=self.decision, reason=f"hook says {self.decision}", updated_input=self.updated
        )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("policy", "hook", "approved", "ran", "asked"),
    [
        ("ask", "allow", False, True, False),  # the hook spares the person the question
        ("allow", "ask", True, True, True),  # the hook wants a person to confirm
        ("allow", "ask", False, False, True),
        ("allow", "deny", True, False, False),  # its deny always wins
        ("deny", "allow", True, False, False),  # and its allow never beats a deny
    ],
)
def test_before_tool_use_runs_before_the_approval_and_weighs_in(
    tmp_path: Path, policy: str, hook: str, approved: bool, ran: bool, asked: bool
) -> None:
    from tests.kernel.kit import Echo

    Echo.runs.clear()
    asks: list[Any] = []

    async def approver(request: Any) -> Any:
        asks.append(request)
        return await (approve_all if approved else deny_all)(request)

    plugins, _ = tools_plugins(policy)
    decider = Decider(hook)
    h = Harness.create(
        tmp_path,
        script=[call("echo", {"text": "x"}), text("ok")],
        plugins=[*plugins, ("d", decider)],
        bundled=["guards"],
    )
    h.run("x", approver=approver)
    assert (Echo.runs == ["x"]) is ran and bool(asks) is asked
    assert decider.seen == (
        [] if policy == "deny" else [policy]
    )  # a denied call never reaches the hook


def test_a_hook_allow_does_not_override_a_hard_guard(tmp_path: Path) -> None:
    """An ask from the essential guards (a write outside the workspace) is the person's:
    a hook's allow cannot turn it into a run."""
    outside = tmp_path / "outside.txt"
    plugins, _ = tools_plugins("allow")
    h = Harness.create(
        tmp_path,
        script=[call("touch", {"path": str(outside)}), text("ok")],
        plugins=[*plugins, ("d", Decider("allow"))],
        bundled=["guards"],
    )
    h.run("x")  # no approver: an ask is denied
    assert not outside.exists()
    (permission,) = h.of_type("permission")
    assert (
        permission.decision == "ask"
        and permission.approved is False
        and "outside the workspace" in permission.reason
    )


def test_a_hook_updated_input_is_validated_and_voted_again(tmp_path: Path) -> None:
    from tests.kernel.kit import Echo

    Echo.runs.clear()
    plugins, voter = tools_plugins("allow", per_tool={})
    h = Harness.create(
        tmp_path,
        script=[call("echo", {"text": "original"}), text("ok")],
        plugins=[*plugins, ("d", Decider(None, {"text": "rewritten"}))],
        bundled=["guards"],
    )
    h.run("x")
    assert Echo.runs == ["rewritten"] and [c.input for c in voter.calls] == [
        {"text": "original"},
        {"text": "rewritten"},
    ]
    bad = Harness.create(
        tmp_path / "bad",
        script=[call("echo", {"text": "o"}), text("ok")],
        plugins=[*tools_plugins("allow")[0], ("d", Decider(None, {"nope": 1}))],
        bundled=["guards"],
    )
    bad.run("x")
    (result,) = bad.of_type("tool_result")
    assert result.outcome == "refused" and "Invalid input" in result.output


def test_a_raising_before_tool_use_or_policy_plugin_denies(tmp_path: Path) -> None:
    """Fail closed where authority is at stake: a hook or voter that raises is a deny."""
    from tests.kernel.kit import Echo

    class RaisingHook:
        @hookimpl
        def ketch_before_tool_use(self, call: Any) -> None:
            raise RuntimeError("hook bug")

    class RaisingVoter:
        @hookimpl
        def ketch_policy_vote(self, call: Any) -> None:
            raise RuntimeError("voter bug")

    for name, plugin in (("hook", RaisingHook()), ("voter", RaisingVoter())):
        Echo.runs.clear()
        plugins, _ = tools_plugins("allow")
        h = Harness.create(
            tmp_path / name,
            script=[call("echo", {"text": "x"}), text("ok")],
            plugins=[*plugins, (name, plugin)],
            bundled=["guards"],
        )
        h.run("x", approver=approve_all)
        assert Echo.runs == [], name
        (result,) = h.of_type("tool_result")
        assert not result.ok and "failed" in result.output, name
        assert [f.plugin for f in h.kernel.pm.failures] == [name]


def test_hook_ketch_before_tool_effect(tmp_path: Path) -> None:
    """Awaited after the approval and right before the effect: the file the call creates
    is not there yet, and the dispatch is journaled after the hook."""
    seen: list[tuple[str, bool, bool, list[str]]] = []

    class Before:
        def __init__(self) -> None:
            self.h: Harness | None = None

        @hookimpl
        async def ketch_before_tool_effect(self, session: Any, call: Any) -> None:
            await asyncio.sleep(0)  # awaited: the call waits for it
            assert self.h is not None
            seen.append(
                (
                    call.tool,
                    call.mutating,
                    (session.workspace / "made.txt").exists(),
                    self.h.types(),
                )
            )

    before = Before()
    plugins, _ = tools_plugins("ask")
    h = Harness.create(
        tmp_path,
        script=[call("touch", {"path": "made.txt"}), call("echo", {"text": "hi"}), text("ok")],
        plugins=[*plugins, ("before", before)],
        bundled=["guards"],
    )
    before.h = h
    h.run("x", approver=approve_all)
    assert [(tool, mutating, exists) for tool, mutating, exists, _ in seen] == [
        ("touch", True, False),
        ("echo", False, True),
    ]
    touch_types = seen[0][3]
    assert (
        touch_types[-1] == "permission" and "tool_started" not in touch_types
    )  # after the approval, before the dispatch
    assert (h.workspace / "made.txt").exists()


def test_hook_ketch_after_tool_use(tmp_path: Path) -> None:
    rec = Recorder()
    h = make(tmp_path, [call("echo", {"text": "hi"}), text("ok")], ("rec", rec))
    h.run("x")
    assert h.of_type("tool_result")[0].output == "hi\n\nnote: lint passed"
    assert ("after_tool_use", "echo") in rec.calls


def test_hook_ketch_tool_result(tmp_path: Path) -> None:
    class Upper:
        @hookimpl
        def ketch_tool_result(self, result: Any) -> Any:
            return result.model_copy(update={"output": result.output.upper()})

    rec = Recorder()
    h = make(tmp_path, [call("echo", {"text": "hi"}), text("ok")], ("rec", rec), ("upper", Upper()))
    h.run("x")
    # The filter runs last: it sees the after_tool_use note, and its result is what
    # the event (journal, screen) and the next request (the model) carry.
    assert h.of_type("tool_result")[0].output == "HI\n\nNOTE: LINT PASSED"
    assert h.provider.requests[1].messages[-1].tool_results[0].output == "HI\n\nNOTE: LINT PASSED"


def test_hook_ketch_stop(tmp_path: Path) -> None:
    seen: list[bool] = []

    class P:
        @hookimpl
        def ketch_stop(self, session: Any, event: Any, stop_hook_active: bool) -> Any:
            seen.append(stop_hook_active)
            return (
                None if stop_hook_active else HookVerdict(block=True, reason="run the tests first")
            )

    h = make(tmp_path, [text("done?"), text("tests pass, done")], ("stop", P()))
    end = h.run("x")
    assert end.text == "tests pass, done" and len(h.provider.requests) == 2
    assert "run the tests first" in h.provider.requests[1].messages[-1].text
    assert seen == [False, True]  # called again after its block, told so


def test_hook_ketch_stop_blocks_at_most_eight_times_a_turn(tmp_path: Path) -> None:
    class P:
        @hookimpl
        def ketch_stop(self, session: Any, event: Any) -> HookVerdict:
            return HookVerdict(block=True, reason="again")

    h = make(tmp_path, [text(f"answer {n}") for n in range(12)], ("stop", P()))
    end = h.run("x")
    assert end.stop_reason == "end_turn" and len(h.provider.requests) == 9
    assert any("kept this turn going 8 times" in n.message for n in h.of_type("notice"))


def test_hook_ketch_event(tmp_path: Path) -> None:
    rec = Recorder()
    h = make(tmp_path, [text("ok")], ("rec", rec))
    h.run("x")
    observed = [name for kind, name in rec.calls if kind == "event"]
    assert observed == h.types()


def test_a_raising_observer_is_isolated(tmp_path: Path) -> None:
    class Bad:
        @hookimpl
        def ketch_event(self, event: Any) -> None:
            raise RuntimeError("observer bug")

    rec = Recorder()
    h = make(tmp_path, [text("fine")], ("bad", Bad()), ("rec", rec))
    end = h.run("x")
    assert end.stop_reason == "end_turn"
    assert [n for k, n in rec.calls if k == "event"] == h.types()
    assert any("observer bug" in w for w in h.kernel.pm.infos["bad"].warnings)


def test_unknown_hook_fails_the_plugin(tmp_path: Path) -> None:
    class Typo:
        @hookimpl
        def ketch_regster_tools(self, register: Any) -> None:  # misspelt on purpose
            pass

    h = make(tmp_path, [], ("typo", Typo()))
    info = h.kernel.pm.infos["typo"]
    assert info.status == "failed" and "ketch_regster_tools" in (info.error or "")


def test_name_clash_keeps_the_first_and_reports(tmp_path: Path) -> None:
    from tests.kernel.kit import Echo

    class Again:
        @hookimpl
        def ketch_register_tools(self, register: Any) -> None:
            register(Echo())

    h = make(tmp_path, [], ("again", Again()))
    assert h.kernel.tools["echo"].plugin == "testtools"
    assert any("clashes" in w for w in h.kernel.pm.infos["again"].warnings)
    assert any("clashes" in w for w in h.kernel.pm.infos["testtools"].warnings)


def test_hooks_run_in_one_event_loop(tmp_path: Path) -> None:
    h = make(tmp_path, [text("a"), text("b")])

    async def two_turns() -> list[str]:
        first = await h.turn("one")
        second = await h.turn("two")
        return [first.text, second.text]

    assert asyncio.run(two_turns()) == ["a", "b"]


class _DemoSpecs:
    """Hooks a plugin declares for itself (as a third-party plugin would)."""

    @hookspec(firstresult=True)
    def demo_pick(self, options: list[str]) -> str | None:
        """The first non-None pick wins."""

    @hookspec
    @fail_closed(lambda plugin, exc: f"refused by {plugin}")
    def demo_check(self, value: int) -> str | None:
        """A check that fails closed: a raising implementation counts as a refusal."""


class _DemoOwner:
    @hookimpl
    def ketch_add_hookspecs(self, pluginmanager: Any) -> None:
        pluginmanager.add_hookspecs(_DemoSpecs)


class _DemoImplementer:
    """Registered *before* the owner: its hooks are known once the owner declares them."""

    @hookimpl
    def demo_pick(self, options: list[str]) -> str | None:
        return options[-1]

    @hookimpl
    def demo_check(self, value: int) -> str | None:
        raise RuntimeError("boom")


def test_hook_ketch_add_hookspecs(tmp_path: Path) -> None:
    from ketch.kernel import Kernel

    class Typo:
        @hookimpl
        def demo_chek(self, value: int) -> str | None:
            return "never"

    kernel = Kernel.boot(
        workspace=tmp_path,
        autoload=False,
        environ={"HOME": str(tmp_path)},
        plugins=[("impl", _DemoImplementer()), ("typo", Typo()), ("owner", _DemoOwner())],
    )
    infos = kernel.pm.infos
    assert infos["impl"].status == "ok" and infos["owner"].status == "ok"
    assert infos["typo"].status == "failed" and "demo_chek" in (infos["typo"].error or "")
    assert kernel.hooks.call("demo_pick", options=["a", "b"]) == [("impl", "b")]
    assert kernel.hooks.first("demo_pick", options=["a"]) == "a"
    # The spec's policy: the raising implementation counts as a refusal, reported once.
    assert kernel.hooks.call("demo_check", value=1) == [("impl", "refused by impl")]
    assert any(f.plugin == "impl" and f.hook == "demo_check" for f in kernel.pm.failures)
    assert asyncio.run(kernel.hooks.call_async("demo_check", value=2)) == [
        ("impl", "refused by impl")
    ]

    # Without its owner, an implementation of the owner's hook is a plugin failure,
    # unless it is marked optional (pytest's optionalhook): then it simply is not called.
    class Optional:
        @hookimpl(optionalhook=True)
        def demo_pick(self, options: list[str]) -> str | None:
            return "optional"

    alone = Kernel.boot(
        workspace=tmp_path,
        autoload=False,
        environ={"HOME": str(tmp_path)},
        plugins=[("impl", _DemoImplementer()), ("optional", Optional())],
    )
    assert alone.pm.infos["impl"].status == "failed"
    assert "demo_check" in (alone.pm.infos["impl"].error or "")
    assert alone.pm.infos["optional"].status == "ok"
