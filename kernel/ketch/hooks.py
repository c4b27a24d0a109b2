"""A typed façade over the hooks: the only way the kernel calls plugins.

Each method says what the kernel expects back, so the loop reads as plain Python and
the calling conventions (keyword arguments, list vs firstresult, awaitables, what a
bad return means) live in one place. Every call goes through :meth:`Hooks._each`,
which calls the implementations one by one in pluggy's order and applies the hook's
error policy (see ``hookspecs``): **fail closed** for votes, before-tool-use, the
sandbox and the result filter; **report and skip** for everything else.
``KetchError`` always propagates: it is a plugin's deliberate stop.

With ``KETCH_TRACE_PLUGINS=1`` every implementation call is written to stderr with
what it returned, votes included.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.errors import KetchError
from ketch.markers import FAIL_CLOSED_ATTR

if TYPE_CHECKING:  # pragma: no cover
    import argparse
    from collections.abc import Callable

    from ketch.compaction import CompactionRequest, CompactionResult
    from ketch.events import Event, TurnEndEvent
    from ketch.plugins import PluginManager
    from ketch.policy import PermissionSnapshot, ProposedCall, Vote
    from ketch.prompt import PromptPart
    from ketch.providers import ModelInfo
    from ketch.session import Session, Subagent
    from ketch.settings import Settings
    from ketch.storage import FieldCipher, Store
    from ketch.tools import ToolContext, ToolResult
    from ketch.verdicts import HookVerdict

TRACE_ENV = "KETCH_TRACE_PLUGINS"

# What an implementation that raised counts as, for the hooks that fail closed.
# Anything not listed is reported and skipped (as if it had returned None).
FailClosed = Callable[[str, BaseException], Any]


def _deny_vote(plugin: str, exc: BaseException) -> Any:
    from ketch.policy import Vote

    return Vote(
        decision="deny",
        reason=f"policy plugin '{plugin}' failed ({type(exc).__name__}); denied to be safe",
        plugin=plugin,
    )


def _deny_verdict(plugin: str, exc: BaseException) -> Any:
    from ketch.verdicts import HookVerdict

    return HookVerdict(
        decision="deny",
        reason=f"the before-tool-use hook of plugin '{plugin}' failed ({type(exc).__name__}); the call was not run",
        plugin=plugin,
    )


def _refuse_sandbox(plugin: str, exc: BaseException) -> Any:
    # None would mean "run it unsandboxed": refuse instead; the tool reports it.
    raise KetchError(
        f"sandbox plugin '{plugin}' failed ({type(exc).__name__}: {exc}); the command was not run"
    )


def _withhold_result(plugin: str, exc: BaseException) -> Any:
    from ketch.tools import ToolResult

    return ToolResult.error(
        f"[ketch] The output filter of plugin '{plugin}' failed ({type(exc).__name__}); the output was withheld."
    )


FAIL_CLOSED: dict[str, FailClosed] = {
    "ketch_policy_vote": _deny_vote,
    "ketch_before_tool_use": _deny_verdict,
    "ketch_sandbox_command": _refuse_sandbox,
    "ketch_tool_result": _withhold_result,
}


class Hooks:
    def __init__(self, pm: PluginManager) -> None:
        self.pm = pm
        self.tracing = os.environ.get(TRACE_ENV, "") not in ("", "0")

    # --- hooks that plugins declare (ketch_add_hookspecs) -------------------------------

    def call(self, name: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """Call a hook by name: (plugin, result) for each non-None result, in call
        order; at most one for a firstresult spec. The spec's error policy applies
        (``ketch.markers.fail_closed``, else report and skip). An awaitable result is
        returned as it is: use :meth:`call_async` for hooks that may be awaited."""
        return list(self._each(name, kwargs, firstresult=self._firstresult(name)))

    def first(self, name: str, **kwargs: Any) -> Any:
        """The first non-None result of a hook, or None."""
        return self._first(name, **kwargs)

    async def call_async(self, name: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """:meth:`call`, with awaitable results awaited under the same error policy."""
        out: list[tuple[str, Any]] = []
        for plugin, value in self._each(name, kwargs, firstresult=self._firstresult(name)):
            value = await self._resolved(name, plugin, value)
            if value is not None:
                out.append((plugin, value))
        return out

    def _firstresult(self, name: str) -> bool:
        spec = getattr(self.pm.hook, name).spec
        return bool(spec is not None and spec.opts.get("firstresult"))

    def _fail_closed(self, name: str) -> FailClosed | None:
        known = FAIL_CLOSED.get(name)
        if known is not None:
            return known
        spec = getattr(self.pm.hook, name).spec
        found = getattr(spec.function, FAIL_CLOSED_ATTR, None) if spec is not None else None
        return found if callable(found) else None

    # --- the one caller ---------------------------------------------------------------

    def _each(
        self, name: str, kwargs: dict[str, Any], *, firstresult: bool = False
    ) -> Iterator[tuple[str, Any]]:
        """(plugin, result) for every implementation of ``name`` that returned
        something, in pluggy's call order (tryfirst/trylast honoured)."""
        for impl in reversed(getattr(self.pm.hook, name).get_hookimpls()):
            result = self._call(name, impl, kwargs)
            if result is None:
                continue
            yield impl.plugin_name, result
            if firstresult:
                return

    def _call(self, name: str, impl: Any, kwargs: dict[str, Any]) -> Any:
        """One implementation. A raise is reported once and replaced by the hook's
        fail-closed value, if it has one (else None)."""
        try:
            result = impl.function(**{arg: kwargs[arg] for arg in impl.argnames})
        except KetchError:
            raise
        except Exception as exc:  # noqa: BLE001 - isolating plugins is the point
            closed = self._fail_closed(name)
            self.pm.record_failure(impl.plugin_name, name, exc, closed=closed is not None)
            result = closed(impl.plugin_name, exc) if closed else None
        if self.tracing:
            sys.stderr.write(f"ketch: trace: {name} [{impl.plugin_name}] -> {_short(result)}\n")
        return result

    def _collect(self, name: str, **kwargs: Any) -> list[tuple[str, Any]]:
        return list(self._each(name, kwargs))

    def _first(self, name: str, **kwargs: Any) -> Any:
        return next((result for _, result in self._each(name, kwargs, firstresult=True)), None)

    async def _resolved(self, name: str, plugin: str, value: Any) -> Any:
        """Await an implementation's awaitable result under the same error policy."""
        if not inspect.isawaitable(value):
            return value
        try:
            return await value
        except KetchError:
            raise
        except Exception as exc:  # noqa: BLE001
            closed = self._fail_closed(name)
            self.pm.record_failure(plugin, name, exc, closed=closed is not None)
            return closed(plugin, exc) if closed else None

    async def _collect_async(self, name: str, **kwargs: Any) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        for plugin, value in self._each(name, kwargs):
            value = await self._resolved(name, plugin, value)
            if value is not None:
                out.append((plugin, value))
        return out

    def register_each(
        self, name: str, make_kwargs: Callable[[str], dict[str, Any]]
    ) -> list[tuple[str, BaseException | None]]:
        """Call a registration hook plugin by plugin, in load order (the first plugin
        to load keeps a clashing name). ``make_kwargs(plugin)`` gives each its own
        ``register``. Returns (plugin, the exception it raised or None)."""
        caller = getattr(self.pm.hook, name)
        outcome: list[tuple[str, BaseException | None]] = []
        for impl in self.pm.in_load_order(caller.get_hookimpls()):
            kwargs = make_kwargs(impl.plugin_name)
            if self.tracing:
                sys.stderr.write(f"ketch: trace: {name} [{impl.plugin_name}]\n")
            try:
                impl.function(**{arg: kwargs[arg] for arg in impl.argnames})
            except Exception as exc:  # noqa: BLE001 - the plugin fails, not ketch
                outcome.append((impl.plugin_name, exc))
            else:
                outcome.append((impl.plugin_name, None))
        return outcome

    def implemented(self, name: str) -> bool:
        return bool(getattr(self.pm.hook, name).get_hookimpls())

    # --- configuration ------------------------------------------------------------------

    def add_cli_options(self, parser: argparse.ArgumentParser, kernel: Any) -> None:
        self._collect("ketch_add_cli_options", parser=parser, kernel=kernel)

    def configure(self, kernel: Any) -> None:
        self._collect("ketch_configure", kernel=kernel)

    def credential(self, provider: str, kind: str) -> str | None:
        value = self._first("ketch_get_credential", provider=provider, kind=kind)
        return value if isinstance(value, str) and value else None

    # --- policy ---------------------------------------------------------------------------

    def policy_votes(
        self, call: ProposedCall, snapshot: PermissionSnapshot, session: Session
    ) -> list[Vote]:
        from ketch.plugins import ESSENTIAL
        from ketch.policy import Vote

        votes: list[Vote] = []
        for plugin, vote in self._collect(
            "ketch_policy_vote", call=call, snapshot=snapshot, session=session
        ):
            if not isinstance(vote, Vote):  # a malformed vote must not count as allow
                vote = Vote(
                    decision="deny",
                    reason=f"policy plugin '{plugin}' returned {type(vote).__name__}, not a Vote",
                )
            update: dict[str, Any] = {}
            if not vote.plugin:
                update["plugin"] = plugin
            if plugin in ESSENTIAL and vote.decision == "ask" and not vote.hard:
                update["hard"] = True
            votes.append(vote.model_copy(update=update) if update else vote)
        return votes

    def permission_rules(self, session: Session) -> dict[str, tuple[str, ...]]:
        rules: dict[str, list[str]] = {"allow": [], "ask": [], "deny": []}
        for _, contributed in self._collect("ketch_permission_rules", session=session):
            if isinstance(contributed, dict):
                for kind in rules:
                    rules[kind] += [
                        str(r) for r in contributed.get(kind) or () if isinstance(r, str)
                    ]
        return {kind: tuple(values) for kind, values in rules.items()}

    def sandbox_command(
        self,
        argv: list[str],
        workspace: Path,
        network: bool,
        exposed: Callable[[Path], bool] | None = None,
        reporters: list[Callable[[bool], str | None]] | None = None,
        context: ToolContext | None = None,
    ) -> list[str] | None:
        result = self._first(
            "ketch_sandbox_command",
            argv=argv,
            workspace=workspace,
            network=network,
            exposed=exposed,
            reporters=reporters,
            context=context,
        )
        return list(result) if result else None

    # --- context -------------------------------------------------------------------------

    def system_prompt_parts(self, session: Session) -> list[PromptPart]:
        from ketch.prompt import PromptPart

        parts: list[PromptPart] = []
        for _, item in self._collect("ketch_system_prompt", session=session):
            for value in item if isinstance(item, list) else [item]:
                if isinstance(value, str):
                    parts.append(PromptPart(text=value))
                elif isinstance(value, PromptPart):
                    parts.append(value)
        return parts

    def compact(
        self, request: CompactionRequest
    ) -> CompactionResult | Awaitable[CompactionResult | None] | None:
        return self._first("ketch_compact", request=request)  # type: ignore[no-any-return]

    # --- storage ---------------------------------------------------------------------------

    def field_cipher(self, settings: Settings) -> FieldCipher | None:
        return self._first("ketch_field_cipher", settings=settings)  # type: ignore[no-any-return]

    def open_store(self, settings: Settings, cipher: FieldCipher | None) -> Store | None:
        return self._first("ketch_open_store", settings=settings, cipher=cipher)  # type: ignore[no-any-return]

    def set_credential(self, provider: str, kind: str, key: str) -> str | None:
        where = self._first("ketch_set_credential", provider=provider, kind=kind, key=key)
        return where if isinstance(where, str) and where else None

    def model_info(self, provider_kind: str, model: str) -> ModelInfo | None:
        from ketch.providers import ModelInfo

        info = self._first("ketch_model_info", provider_kind=provider_kind, model=model)
        return info if isinstance(info, ModelInfo) else None

    # --- lifecycle ---------------------------------------------------------------------------

    def session_start(self, session: Session) -> None:
        self._collect("ketch_session_start", session=session)

    def session_end(self, session: Session, reason: str) -> None:
        self._collect("ketch_session_end", session=session, reason=reason)

    async def user_prompt_submit(self, session: Session, prompt: str) -> list[HookVerdict]:
        return _verdicts(
            await self._collect_async("ketch_user_prompt_submit", session=session, prompt=prompt)
        )

    async def expand_prompt(self, session: Session, prompt: str, intake: Any) -> list[Any]:
        """The parts every ``ketch_expand_prompt`` implementation added, in plugin order
        (awaited; one that raises is isolated and adds nothing)."""
        parts: list[Any] = []
        for _, value in await self._collect_async(
            "ketch_expand_prompt", session=session, prompt=prompt, intake=intake
        ):
            if isinstance(value, list | tuple):
                parts.extend(
                    p for p in value if getattr(p, "type", None)
                )  # message parts (text, images)
        return parts

    async def before_tool_use(
        self, session: Session, call: ProposedCall, decision: str
    ) -> list[HookVerdict]:
        from ketch.verdicts import HookVerdict

        verdicts: list[HookVerdict] = []
        for plugin, value in await self._collect_async(
            "ketch_before_tool_use", session=session, call=call, decision=decision
        ):
            if not isinstance(value, HookVerdict):  # fail closed on a malformed answer too
                value = HookVerdict(
                    decision="deny",
                    reason=f"the before-tool-use hook of plugin '{plugin}' returned {type(value).__name__}",
                    plugin=plugin,
                )
            verdicts.append(value)
        return verdicts

    async def before_tool_effect(self, session: Session, call: ProposedCall) -> None:
        await self._collect_async("ketch_before_tool_effect", session=session, call=call)

    async def after_tool_use(
        self, session: Session, call: ProposedCall, result: ToolResult
    ) -> list[HookVerdict]:
        """Every implementation's answer as a verdict (a plain note becomes ``context``)."""
        from ketch.verdicts import HookVerdict

        answers = await self._collect_async(
            "ketch_after_tool_use", session=session, call=call, result=result
        )
        return [
            HookVerdict(context=a, plugin=p) if isinstance(a, str) else a
            for p, a in answers
            if (isinstance(a, str) and a) or isinstance(a, HookVerdict)
        ]

    def tool_result(self, session: Session, call: ProposedCall, result: ToolResult) -> ToolResult:
        """Each ``ketch_tool_result`` implementation in turn may replace the result."""
        from ketch.tools import ToolResult

        kwargs: dict[str, Any] = {"session": session, "call": call}
        for impl in reversed(self.pm.hook.ketch_tool_result.get_hookimpls()):
            # One implementation at a time: each sees the previous one's result.
            replaced = self._call("ketch_tool_result", impl, {**kwargs, "result": result})
            if isinstance(replaced, ToolResult):
                result = replaced
        return result

    async def notification(self, session: Session, message: str, kind: str) -> None:
        await self._collect_async("ketch_notification", session=session, message=message, kind=kind)

    def before_compaction(self, session: Session, reason: str) -> None:
        self._collect("ketch_before_compaction", session=session, reason=reason)

    def after_compaction(self, session: Session, result: CompactionResult) -> None:
        self._collect("ketch_after_compaction", session=session, result=result)

    async def stop(
        self, session: Session, event: TurnEndEvent, stop_hook_active: bool = False
    ) -> list[HookVerdict]:
        return _verdicts(
            await self._collect_async(
                "ketch_stop", session=session, event=event, stop_hook_active=stop_hook_active
            )
        )

    def event(self, session: Session, event: Event) -> None:
        self._collect("ketch_event", session=session, event=event)

    async def subagent_start(self, session: Session, agent: Subagent) -> list[HookVerdict]:
        return _verdicts(
            await self._collect_async("ketch_subagent_start", session=session, agent=agent)
        )

    async def subagent_stop(
        self, session: Session, agent: Subagent, result: str
    ) -> list[HookVerdict]:
        return _verdicts(
            await self._collect_async(
                "ketch_subagent_stop", session=session, agent=agent, result=result
            )
        )


def _verdicts(values: list[tuple[str, Any]]) -> list[HookVerdict]:
    from ketch.verdicts import HookVerdict

    return [v for _, v in values if isinstance(v, HookVerdict)]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."
