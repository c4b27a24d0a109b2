"""The one hook caller, driven by the specs.

Every hook is called through pluggy (``pm.hook.NAME(**kwargs)``), so pluggy's own
ordering, ``firstresult``, tracing and call monitoring apply. What ketch adds is done
once, per implementation, by the wrapper :func:`isolate` puts around it when its
plugin registers: an implementation that raises, or answers with a type its spec does
not declare (:func:`ketch.markers.returns`), is reported once and counts as the
spec's fail-closed value (:func:`ketch.markers.fail_closed`), else as no answer;
``KetchError`` always propagates (a plugin's deliberate stop). Each non-None answer
comes back as an :class:`~ketch.markers.Answer` naming its plugin.

:class:`Hooks` is what callers use: :meth:`Hooks.call`, :meth:`Hooks.first`,
:meth:`Hooks.call_async`, :meth:`Hooks.chain` and :meth:`Hooks.register` for any
declared hook (the kernel's or a plugin's), plus typed methods only where the kernel
gives answers a meaning (votes, rules, prompt parts, verdicts); ``@facade`` names
their spec, and a test holds them to it. ``KETCH_TRACE_PLUGINS=1`` writes each call
(pluggy's monitoring) and each implementation's answer (pluggy's tracer) to stderr.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ketch.errors import KetchError
from ketch.markers import CHAINED_ATTR, FAIL_CLOSED_ATTR, RETURNS_ATTR, Answer

if TYPE_CHECKING:  # pragma: no cover
    from ketch.plugins import PluginManager
    from ketch.policy import PermissionSnapshot, ProposedCall, Vote
    from ketch.prompt import PromptPart
    from ketch.session import Session
    from ketch.tools import ToolResult
    from ketch.verdicts import HookVerdict

REGISTERS_ATTR = "ketch_registers"
_F = TypeVar("_F", bound=Callable[..., Any])
# The plugin whose registration hook is running, and what raised during a registration.
_REGISTERING: ContextVar[str] = ContextVar("ketch_registering", default="")
_REGISTRATION_FAILURES: ContextVar[dict[str, BaseException] | None] = ContextVar(
    "ketch_registration_failures", default=None
)
_CHAIN: ContextVar[list[Any] | None] = ContextVar("ketch_chain", default=None)


@dataclass(frozen=True)
class Policy:
    """What a spec declares about its calls (read once per hook name)."""

    fail_closed: Callable[[str, BaseException], Any] | None = None
    returns: tuple[Any, ...] = ()  # types, or "module:Name" resolved on first use
    chained: str | None = None
    registers: bool = False

    def types(self) -> tuple[type, ...]:
        return tuple(_resolve(t) for t in self.returns)


def _resolve(ref: Any) -> type:
    if isinstance(ref, str):
        module, _, name = ref.partition(":")
        return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]
    return ref  # type: ignore[no-any-return]


def policy_of(spec_function: Any) -> Policy:
    found = getattr(spec_function, FAIL_CLOSED_ATTR, None)
    return Policy(
        fail_closed=found if callable(found) else None,
        returns=tuple(getattr(spec_function, RETURNS_ATTR, ())),
        chained=getattr(spec_function, CHAINED_ATTR, None),
        registers=bool(getattr(spec_function, REGISTERS_ATTR, False)),
    )


def registers(spec: _F) -> _F:
    """Mark a registration hook: an implementation that raises fails its plugin, and
    nothing the plugin registered anywhere is kept (the kernel's ``ketch_register_*``)."""
    setattr(spec, REGISTERS_ATTR, True)
    return spec


def registering_plugin() -> str:
    """The plugin whose registration hook is running (inside ``register``)."""
    return _REGISTERING.get()


def isolate(pm: PluginManager, hook_name: str, impl: Any) -> None:
    """Wrap one implementation (a pluggy ``HookImpl``) in its spec's error policy."""
    function = impl.function
    if getattr(function, "__ketch_isolated__", False):
        return
    plugin = impl.plugin_name
    argnames = tuple(impl.argnames)

    def isolated(*args: Any) -> Answer | None:
        policy = pm.policy(hook_name)
        chain = _CHAIN.get() if policy.chained else None
        if chain is not None and policy.chained in argnames:
            args = tuple(
                chain[0] if n == policy.chained else a for n, a in zip(argnames, args, strict=True)
            )
        token = _REGISTERING.set(plugin) if policy.registers else None
        try:
            value = function(*args)
        except KetchError:
            raise
        except Exception as exc:  # noqa: BLE001 - isolating plugins is the point
            return _failed(pm, plugin, hook_name, policy, exc)
        finally:
            if token is not None:
                _REGISTERING.reset(token)
        answer = _answer(pm, plugin, hook_name, policy, value)
        if chain is not None and answer is not None:
            chain[0] = answer.value
        if pm.tracing:
            pm.trace.root.get("impl")(f"{hook_name} [{plugin}] -> {_short(value)}")
        return answer

    for attr in ("__name__", "__qualname__", "__doc__", "__module__", "__wrapped__"):
        if hasattr(function, attr) or attr == "__wrapped__":
            setattr(isolated, attr, getattr(function, attr, function))
    isolated.__dict__.update(getattr(function, "__dict__", {}))
    isolated.__ketch_isolated__ = True  # type: ignore[attr-defined]
    impl.function = isolated


def _failed(
    pm: PluginManager, plugin: str, hook: str, policy: Policy, exc: BaseException
) -> Answer | None:
    if policy.registers:
        failures = _REGISTRATION_FAILURES.get()
        if failures is not None:
            failures.setdefault(plugin, exc)
            return None
    closed = policy.fail_closed
    pm.record_failure(plugin, hook, exc, closed=closed is not None)
    return Answer(plugin, closed(plugin, exc)) if closed is not None else None


def _answer(
    pm: PluginManager, plugin: str, hook: str, policy: Policy, value: Any, *, awaited: bool = False
) -> Answer | None:
    """``value`` as an answer: None for no answer, and the spec's failure for a type the
    spec does not declare (an awaitable is checked once ``awaited``)."""
    if value is None:
        return None
    checked = awaited or not inspect.isawaitable(value)
    if policy.returns and checked and not isinstance(value, policy.types()):
        wanted = " or ".join(t.__name__ for t in policy.types())
        error = TypeError(f"returned {type(value).__name__}, not {wanted}")
        return _failed(pm, plugin, hook, policy, error)
    return Answer(plugin, value)


async def resolved(pm: PluginManager, hook: str, answer: Answer) -> Answer | None:
    """An answer whose value may be awaited, awaited under the same error policy."""
    if not inspect.isawaitable(answer.value):
        return answer
    policy = pm.policy(hook)
    try:
        value = await answer.value
    except KetchError:
        raise
    except Exception as exc:  # noqa: BLE001
        return _failed(pm, answer.plugin, hook, policy, exc)
    return _answer(pm, answer.plugin, hook, policy, value, awaited=True)


def facade(hook: str) -> Callable[[_F], _F]:
    """Name the spec a typed method of :class:`Hooks` calls (checked by a test)."""

    def mark(method: _F) -> _F:
        method.__ketch_hook__ = hook  # type: ignore[attr-defined]
        return method

    return mark


class Hooks:
    def __init__(self, pm: PluginManager) -> None:
        self.pm = pm

    # --- any declared hook ---------------------------------------------------------------

    def _caller(self, name: str) -> Any:
        caller = getattr(self.pm.hook, name, None)
        # Undeclared (its owner is not loaded): optional implementations are not called.
        return caller if caller is not None and caller.spec is not None else None

    def call(self, name: str, **kwargs: Any) -> list[Answer]:
        """Every non-None answer, as (plugin, value), in pluggy's call order; at most one
        for a firstresult spec. An awaitable answer is returned as it is: use
        :meth:`call_async` for hooks that may be awaited."""
        caller = self._caller(name)
        if caller is None:
            return []
        out = caller(**kwargs)
        if isinstance(out, list):
            return out
        return [] if out is None else [out]

    def first(self, name: str, **kwargs: Any) -> Any:
        """The first non-None answer's value, or None."""
        answers = self.call(name, **kwargs)
        return answers[0].value if answers else None

    async def call_async(self, name: str, **kwargs: Any) -> list[Answer]:
        """:meth:`call`, with awaitable answers awaited under the same error policy."""
        out: list[Answer] = []
        for answer in self.call(name, **kwargs):
            done = await resolved(self.pm, name, answer)
            if done is not None:
                out.append(done)
        return out

    async def first_async(self, name: str, **kwargs: Any) -> Any:
        answers = await self.call_async(name, **kwargs)
        return answers[0].value if answers else None

    def values(self, name: str, **kwargs: Any) -> list[Any]:
        return [answer.value for answer in self.call(name, **kwargs)]

    async def values_async(self, name: str, **kwargs: Any) -> list[Any]:
        return [answer.value for answer in await self.call_async(name, **kwargs)]

    def chain(self, name: str, **kwargs: Any) -> Any:
        """A chained spec (``@chained(arg)``): each implementation sees the previous
        answer as ``arg``; returns the last answer (``kwargs[arg]`` when none answered)."""
        arg = self.pm.policy(name).chained
        assert arg is not None, f"{name} is not a chained hook"
        box = [kwargs[arg]]
        token = _CHAIN.set(box)
        try:
            self.call(name, **kwargs)
        finally:
            _CHAIN.reset(token)
        return box[0]

    def register(
        self, name: str, withheld: frozenset[str] = frozenset(), **kwargs: Any
    ) -> tuple[list[str], dict[str, BaseException]]:
        """Call a registration spec (``@registers``) once, through pluggy; inside
        ``register`` callbacks :func:`registering_plugin` names the plugin. Returns the
        plugins that implement it, in load order (the first keeps a clashing name), and
        what each failing one raised. ``withheld`` plugins are not called."""
        caller = self._caller(name)
        if caller is None:
            return [], {}
        if withheld:
            caller = self.pm.subset_hook_caller(name, remove_plugins=self._plugins(withheld))
        order = [impl.plugin_name for impl in self.pm.in_load_order(caller.get_hookimpls())]
        failures: dict[str, BaseException] = {}
        token = _REGISTRATION_FAILURES.set(failures)
        try:
            caller(**kwargs)
        finally:
            _REGISTRATION_FAILURES.reset(token)
        return order, failures

    def _plugins(self, names: frozenset[str]) -> list[Any]:
        return [p for n in names if (p := self.pm.get_plugin(n)) is not None]

    def implemented(self, name: str) -> bool:
        caller = self._caller(name)
        return bool(caller is not None and caller.get_hookimpls())

    # --- typed where the kernel gives answers a meaning ---------------------------------

    @facade("ketch_policy_vote")
    def policy_votes(
        self, call: ProposedCall, snapshot: PermissionSnapshot, session: Session
    ) -> list[Vote]:
        """Every vote, attributed to its plugin; an ask from an essential plugin is hard."""
        from ketch.plugins import ESSENTIAL

        votes: list[Vote] = []
        for plugin, vote in self.call(
            "ketch_policy_vote", call=call, snapshot=snapshot, session=session
        ):
            update: dict[str, Any] = {}
            if not vote.plugin:
                update["plugin"] = plugin
            if plugin in ESSENTIAL and vote.decision == "ask" and not vote.hard:
                update["hard"] = True
            votes.append(vote.model_copy(update=update) if update else vote)
        return votes

    @facade("ketch_permission_rules")
    def permission_rules(self, session: Session) -> dict[str, tuple[str, ...]]:
        """Every contribution, concatenated in plugin order (approvals included)."""
        rules: dict[str, list[str]] = {"allow": [], "ask": [], "deny": [], "approvals": []}
        for contributed in self.values("ketch_permission_rules", session=session):
            for kind in rules:
                rules[kind] += [str(r) for r in contributed.get(kind) or () if isinstance(r, str)]
        return {kind: tuple(values) for kind, values in rules.items()}

    @facade("ketch_system_prompt")
    def system_prompt_parts(self, session: Session) -> list[PromptPart]:
        from ketch.prompt import PromptPart

        parts: list[PromptPart] = []
        for item in self.values("ketch_system_prompt", session=session):
            for value in item if isinstance(item, list) else [item]:
                if isinstance(value, str):
                    parts.append(PromptPart(text=value))
                elif isinstance(value, PromptPart):
                    parts.append(value)
        return parts

    @facade("ketch_expand_prompt")
    async def expand_prompt(self, session: Session, prompt: str, intake: Any) -> list[Any]:
        """The parts every implementation added, in plugin order."""
        parts: list[Any] = []
        for value in await self.values_async(
            "ketch_expand_prompt", session=session, prompt=prompt, intake=intake
        ):
            parts.extend(p for p in value if getattr(p, "type", None))  # message parts
        return parts

    @facade("ketch_before_tool_use")
    async def before_tool_use(
        self, session: Session, call: ProposedCall, decision: str
    ) -> list[HookVerdict]:
        return await self.values_async(
            "ketch_before_tool_use", session=session, call=call, decision=decision
        )

    @facade("ketch_after_tool_use")
    async def after_tool_use(
        self, session: Session, call: ProposedCall, result: ToolResult
    ) -> list[HookVerdict]:
        """Every answer as a verdict (a plain note becomes ``context``)."""
        from ketch.verdicts import HookVerdict

        answers = await self.call_async(
            "ketch_after_tool_use", session=session, call=call, result=result
        )
        return [
            HookVerdict(context=value, plugin=plugin) if isinstance(value, str) else value
            for plugin, value in answers
            if not isinstance(value, str) or value
        ]

    @facade("ketch_tool_result")
    def tool_result(self, session: Session, call: ProposedCall, result: ToolResult) -> ToolResult:
        """Each filter in turn may replace the result."""
        return self.chain("ketch_tool_result", session=session, call=call, result=result)  # type: ignore[no-any-return]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def trace_writer(line: str) -> None:
    sys.stderr.write(f"ketch: trace: {line}")
