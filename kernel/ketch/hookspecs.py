"""Every hook ketch calls. Plugins implement them with ``@ketch.hookimpl``.

Conventions, as in pytest:

* Hooks named ``ketch_register_*`` take a ``register`` callback (and, when they want
  it, the ``kernel``) and are called once per process. A plugin whose registration
  raises is reported as failed and removed; what it registered before raising is
  discarded.
* "firstresult" hooks stop at the first implementation that returns something other
  than None; that value is the result.
* Every other hook collects the non-None returns of all implementations into a list.
* Arguments are passed by keyword; an implementation may accept any subset of them.
* Hooks marked "may be awaited" accept an awaitable as an implementation's return;
  the kernel awaits it inside the turn's event loop (run a subprocess without
  blocking the turn).
* The kernel calls every hook through one caller (:mod:`ketch.hooks`), driven by
  what each spec declares (:mod:`ketch.markers`): an implementation that raises, or
  answers with a type the spec does not declare (``@returns``), is reported once
  (``ketch plugins`` and stderr) and then:

  - **fails closed** where authority is at stake (``@fail_closed``): a raising
    ``ketch_policy_vote`` counts as a deny vote, a raising ``ketch_before_tool_use``
    denies the call, and a raising ``ketch_tool_result`` withholds the output (never
    "show it unfiltered");
  - is **reported and skipped** everywhere else: the call goes on as if it had
    returned None;
  - **fails its plugin** for registration hooks (``@registers``): nothing it
    registered anywhere is kept.

  Raising :class:`ketch.errors.KetchError` is the deliberate way to stop with a
  message (e.g. a store that is recovery-locked): it propagates.
* Hook wrappers (``wrapper=True``/``hookwrapper=True``) are not supported: each
  implementation is isolated on its own.

Hook modules should stay light: a plugin's entry module is imported whenever
plugins load (``ketch --help`` included), so import heavy modules inside hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch.hooks import registers
from ketch.markers import chained, fail_closed, hookspec, returns

if TYPE_CHECKING:  # pragma: no cover
    import argparse
    from collections.abc import AsyncIterator, Awaitable, Callable

    from ketch.commands import Command
    from ketch.events import Event, TurnEndEvent
    from ketch.frontends import Frontend
    from ketch.intake import PromptIntake
    from ketch.kernel import Kernel
    from ketch.messages import Message, Part, ToolCallPart, Usage
    from ketch.modes import Mode, Profile
    from ketch.plugins import PluginManager
    from ketch.policy import PermissionSnapshot, ProposedCall, Vote
    from ketch.prompt import PromptPart
    from ketch.providers import (
        ModelInfo,
        Provider,
        ProviderConfig,
        ProviderError,
        ProviderKind,
        ProviderRequest,
    )
    from ketch.session import Session
    from ketch.settings import Settings, SettingsSection, WorkspaceSplit
    from ketch.stash import Stash
    from ketch.storage import FieldCipher, SessionRecord, Store, StoreUnavailable
    from ketch.tools import Tool, ToolResult
    from ketch.verdicts import HookVerdict


def _deny_vote(plugin: str, exc: BaseException) -> Any:
    from ketch.policy import Vote

    return Vote(
        decision="deny",
        reason=f"policy plugin '{plugin}' failed ({type(exc).__name__}: {exc}); denied to be safe",
        plugin=plugin,
    )


def _deny_verdict(plugin: str, exc: BaseException) -> Any:
    from ketch.verdicts import HookVerdict

    return HookVerdict(
        decision="deny",
        reason=f"the before-tool-use hook of plugin '{plugin}' failed ({type(exc).__name__}: {exc}); the call was not run",
        plugin=plugin,
    )


def _withhold_result(plugin: str, exc: BaseException) -> Any:
    from ketch.tools import ToolResult

    return ToolResult.error(
        f"[ketch] The output filter of plugin '{plugin}' failed ({type(exc).__name__}); the output was withheld."
    )


_VERDICT = "ketch.verdicts:HookVerdict"

# --- registration -----------------------------------------------------------------------


@hookspec(historic=True)
def ketch_add_hookspecs(pluginmanager: PluginManager) -> None:
    """Declare the hooks this plugin owns, as pytest's ``pytest_addhooks`` does.

    Called once for each plugin as it registers (historic: a plugin loaded later is
    called too). Call ``pluginmanager.add_hookspecs(module_or_class)`` with the specs
    (functions decorated with ``ketch.hookspec``). Any plugin may then implement
    them, whatever the load order, and the owner calls them through
    ``kernel.hooks.call(name, ...)`` / ``first`` / ``call_async``, which apply the
    spec's error policy (``ketch.markers.fail_closed``; report and skip otherwise).
    A plugin that implements a hook no loaded plugin declares is still failed (a typo,
    or its owner is disabled). The return value is ignored.
    """


@hookspec
@registers
def ketch_register_providers(register: Callable[[ProviderKind], None], kernel: Kernel) -> None:
    """Register provider kinds.

    Called once per process, when the kernel first needs providers (a turn, ``ketch
    models``, ``ketch plugins``). Call ``register(ProviderKind(...))`` once per kind the
    plugin offers (``openai``, ``anthropic``, ...). Two plugins registering the same
    kind: the first registered (load order) wins and the clash is reported.
    The return value is ignored.
    """


@hookspec
@registers
def ketch_register_tools(
    register: Callable[[Tool | Callable[..., Any]], None], kernel: Kernel
) -> None:
    """Register tools.

    Called once per process, before the first turn (and by ``ketch plugins``).
    ``register`` accepts a :class:`ketch.tools.Tool` instance or subclass, or a plain
    typed function with a docstring (its signature becomes the input schema and its
    docstring the description; decorate it with ``@ketch.tool(effects=...)`` to
    declare effects). Name clashes between plugins are reported in ``ketch plugins``;
    the tool from the plugin that loaded first is kept. A plugin whose tools depend on
    configuration (MCP servers) reads it from ``kernel.settings``. The return value is
    ignored.
    """


@hookspec
@registers
def ketch_register_frontends(register: Callable[[Frontend], None], kernel: Kernel) -> None:
    """Register frontends (the interactive shell, the headless print mode, ...).

    Called once per process, before the CLI hands over to a frontend. A
    :class:`ketch.frontends.Frontend` says when it is the default: ``role="prompt"``
    for ``-p`` or piped stdin, ``role="terminal"`` for an interactive terminal, or no
    role (chosen only by name: ``--frontend NAME`` or a subcommand). The return value
    is ignored.
    """


@hookspec
@registers
def ketch_register_commands(register: Callable[[Command], None], kernel: Kernel) -> None:
    """Register commands: CLI subcommands (``ketch NAME ...``) and/or slash commands.

    Called once per process, before the command line is parsed (so ``ketch --help``
    lists them). A :class:`ketch.commands.Command` says whether it is a CLI subcommand,
    a slash command or both. The return value is ignored.
    """


@hookspec
@registers
def ketch_register_settings(register: Callable[[SettingsSection], None], kernel: Kernel) -> None:
    """Declare the configuration sections this plugin owns.

    Called once per process, before settings are validated. Call
    ``register(SettingsSection(name, model, workspace_safe=...))`` once per table: the
    layered data of ``[name]`` (user < workspace < environment < command line) is
    validated with the pydantic ``model``, a bad value in one layer is reported as
    ``path:line: key: what`` and that layer's table dropped (never a traceback), and
    ``kernel.settings.of(model)`` returns the typed result. ``workspace_safe`` names
    the keys a repository's ``.ketch/config.toml`` may set before the user trusts the
    workspace (default: none). Two plugins may extend one table with different keys.
    The return value is ignored.
    """


@hookspec
@registers
def ketch_register_events(register: Callable[[type[Event]], None], kernel: Kernel) -> None:
    """Declare the event models this plugin emits (subclasses of :class:`ketch.events.Event`
    with a ``type`` of their own).

    Called once per process, when the kernel first needs the event registry
    (``kernel.events``). Registered events are carried like the kernel's own: observers,
    listeners, ``stream-json``, the store. ``ketch.events.parse_event`` reads one back by
    its ``type`` (a plain ``Event`` with its fields when its plugin is not loaded). Two
    plugins registering one ``type``: the first keeps it. The return value is ignored.
    """


@hookspec
@registers
def ketch_register_modes(register: Callable[[Mode], None]) -> None:
    """Declare session modes (``register(Mode(name, description, read_only=...))``).

    Called once per process, when the command line is built. A ``read_only`` mode
    offers no mutating tool and refuses one structurally, before any vote. The mode
    marked ``default`` is what a new session starts in. With no mode declared at all,
    sessions have no mode and nothing is refused by mode. The return value is ignored.
    """


@hookspec
@registers
def ketch_register_profiles(register: Callable[[Profile], None]) -> None:
    """Declare permission profiles (``register(Profile(name, description, default=...))``).

    Called once per process, when the command line is built. Profiles are the policy
    plugins' vocabulary: the kernel only keeps the session's current one in the
    permission snapshot. The profile marked ``default`` is what a new session starts
    with and what a resumed one is reset to (authority is never restored). The return
    value is ignored.
    """


@hookspec
def ketch_add_cli_options(parser: argparse.ArgumentParser, kernel: Kernel) -> None:
    """Add options to the main ``ketch`` command line.

    Called once per process, before arguments are parsed, with the main parser.
    Options added here are read back from ``kernel.args``. The return value is ignored.
    """


# --- configuration and startup ----------------------------------------------------------


@hookspec
def ketch_configure(kernel: Kernel) -> None:
    """The kernel is built: plugins loaded, settings final, registries filled.

    Called once per process, before any session starts. Use it to check the
    environment (e.g. is bubblewrap installed) and to keep a reference to the kernel.
    The return value is ignored.
    """


@hookspec(firstresult=True)
def ketch_workspace_setting(kernel: Kernel, key: tuple[str, ...], value: Any) -> Any | None:
    """What of one held-back value of the workspace's ``.ketch/config.toml`` applies.

    A repository's own config applies as written only for keys that cannot raise
    authority (the safe kernel keys and each section's ``workspace_safe``); every other
    value is held back, and this hook is asked once per such value while settings load
    (again after ``kernel.reload_settings()``) by the ``ketch_workspace_config``
    implementation. ``key`` is its path of table names
    (``("permissions", "allow")``), ``value`` the value as written. Return what of it
    applies: the value itself, or a narrowed copy of it (some entries of a list or
    table); None to abstain. No answer at all means none of it applies, and it is
    reported as ignored. An implementation must not read ``kernel.settings`` (they are
    being loaded): ``kernel.layers`` holds the files as written. Stops at the first
    non-None result; an implementation that raises counts as no answer.
    """


@hookspec(firstresult=True)
@returns(str)
def ketch_get_credential(provider: str, kind: str, kernel: Kernel) -> str | None:
    """Look up the API key of provider ``provider`` (of kind ``kind``) in a secret store,
    for ``kernel`` (whose registries say whether that kind needs a key at all).

    Called when a provider is built and its environment variable is not set. Return
    the key, or None when this store has none. Stops at the first non-None result.
    The key is wrapped in :class:`ketch.providers.Secret` at once and never logged.
    """


@hookspec(firstresult=True)
@returns("ketch.providers:ModelInfo")
def ketch_model_info(provider_kind: str, model: str, kernel: Kernel) -> ModelInfo | None:
    """What is known about ``model`` served by a provider of kind ``provider_kind``.

    Called whenever ketch needs a model's facts without asking the provider: the
    context window before the provider reports one, whether to send images (and by
    plugins for facts of their own, such as prices). Return a
    :class:`ketch.providers.ModelInfo` (unknown fields None; ``source`` naming where the
    facts come from; a subclass may carry more), or None when this plugin knows nothing
    of the model. Never fetch anything here: it is called on every request. Stops at the
    first non-None result.
    """


# --- policy -----------------------------------------------------------------------------


@hookspec
@fail_closed(_deny_vote)
@returns("ketch.policy:Vote")
def ketch_policy_vote(
    call: ProposedCall, snapshot: PermissionSnapshot, session: Session
) -> Vote | None:
    """Vote on one proposed tool call.

    Called once per tool call, after the input validated and before anything runs,
    with the permission snapshot frozen at the start of the step. Return a
    :class:`ketch.policy.Vote` (allow, ask or deny, with a reason), or None to abstain.
    All votes are combined: deny beats ask beats allow; no vote at all means ask. An
    implementation that raises counts as a deny vote. A vote's ``origin`` and ``rules``
    say what settled it (a rule and its text, a proof, the profile...); the permission
    event records them, and so do provenance receipts.
    """


@hookspec
@returns(dict)
def ketch_permission_rules(session: Session) -> dict[str, list[str]] | None:
    """Contribute permission rules to the snapshot of one step.

    Called once per step, when the permission snapshot is taken (and by commands that
    show the rules). Return ``{"allow": [...], "ask": [...], "deny": [...]}`` (any
    subset) in the rule syntax the policy plugins share, and ``"approvals"``: the
    scopes the person allowed for this session (the plugin that keeps them answers),
    or None. The kernel concatenates every contribution, in plugin order, into
    ``snapshot.rules`` and ``snapshot.approvals``.
    """


@hookspec
@returns(dict)
def ketch_permission_facts(session: Session) -> dict[str, Any] | None:
    """Contribute facts to the permission snapshot of one step.

    Called once per step, when the permission snapshot is taken. Return a dict of
    facts (``{"sandboxed": True}``) keyed by the names a contract between plugins
    declares, or None; the kernel merges every contribution, in plugin order, into
    ``snapshot.facts``, frozen for the step, and gives them no meaning itself.
    """


# --- context ----------------------------------------------------------------------------


@hookspec
@returns(list, str, "ketch.prompt:PromptPart")
def ketch_system_prompt(session: Session) -> list[PromptPart] | PromptPart | str | None:
    """Contribute parts of the system prompt.

    Called before every provider request (and again after a compaction, and when a
    command such as ``/context`` measures the context). Return a string, a
    :class:`ketch.prompt.PromptPart` (with an ``order`` and a ``title``) or a list of
    them; None contributes nothing. The kernel joins all parts, sorted by order.
    """


@hookspec(firstresult=True)
@returns("ketch.providers:ProviderRequest")
def ketch_build_request(
    session: Session, tools: list[Tool], overflow: int | None
) -> ProviderRequest | None:
    """Build the request for the session's next model call, fitted to the model.

    Called before every provider request with the ``tools`` offered (``overflow`` None),
    and once more after the provider rejected a request as too long, with ``overflow``:
    the context limit its error named (0 when it named none); may be awaited. A plugin
    that owns the context budget measures the request, makes room and answers a
    :class:`ketch.providers.ProviderRequest`; raise :class:`ketch.errors.ContextOverflow`
    to stop the turn with your explanation. None: the kernel sends the system prompt,
    the tools and the whole active context as they are; after an overflow, None means
    nobody can make room, and the provider's error ends the turn. firstresult.
    """


@hookspec(firstresult=True)
@returns(dict)
def ketch_response_usage(session: Session, usage: Usage, message: Message) -> dict[str, Any] | None:
    """The context meter's fields for the ``usage`` event of one response.

    Called once for each response, with its ``usage`` and its ``message``, before the
    ``usage`` event goes out. Return ``context_utilization`` (0-1), ``context_tokens``
    and ``effective_capacity``, or None (the event then reports 0). firstresult.
    """


@hookspec
@returns(dict)
def ketch_event_fields(session: Session, event: Event) -> dict[str, Any] | None:
    """Add fields to one of the kernel's accounting events before it is emitted.

    Called once for each ``usage`` event (one response) and each ``turn_end`` event (and
    for the ``turn_end`` a stop hook is shown). Return the fields to add (a model
    catalog adds ``cost_usd``), or None. Contributions are merged in plugin order; a
    field the event already has is never replaced.
    """


# --- storage and encryption -------------------------------------------------------------


@hookspec(firstresult=True)
def ketch_open_store(settings: Settings, cipher: FieldCipher | None) -> Store | None:
    """Open the session store.

    Called once per process, lazily, when a session needs storing or loading, by the
    plugin that keeps the store (``ketch_session_store``: the ``store`` plugin).
    ``cipher`` is what ``ketch_field_cipher`` returned (None when no encryption
    plugin is loaded). Return a :class:`ketch.storage.Store`, or None when this
    plugin does not provide storage. Raise :class:`ketch.storage.StoreUnavailable`
    to refuse, with ``exists=True`` when there is a store that cannot be opened
    (recovery-locked, damaged, a wrong passphrase: a headless run then stops before the
    model is called, unless ``--no-save``) and ``exists=False`` when there is none and
    none can be made (the run goes on unsaved, said once). The reason is kept and
    ``kernel.store`` raises it wherever the store is used later. Stops at
    the first non-None result.
    """


@hookspec(firstresult=True)
def ketch_field_cipher(settings: Settings) -> FieldCipher | None:
    """Provide the field cipher the store encrypts with.

    Called once per process, just before ``ketch_open_store``. Return a
    :class:`ketch.storage.FieldCipher`, or None. Raise
    :class:`ketch.storage.StoreUnavailable` when the key exists but cannot be had (a
    locked keyring, a wrong passphrase). Stops at the first non-None result.
    """


# --- lifecycle --------------------------------------------------------------------------


@hookspec
def ketch_session_start(session: Session) -> None:
    """A session started (new or resumed). Called once per session. Return ignored."""


@hookspec
def ketch_session_end(session: Session, reason: str) -> None:
    """A session is ending (``reason``: exit, error, ...). Called once. Return ignored."""


@hookspec
@returns(_VERDICT)
def ketch_user_prompt_submit(session: Session, prompt: str) -> HookVerdict | None:
    """The user submitted a prompt; it is not in the history yet.

    Called once per prompt (steers included); may be awaited. Return a
    :class:`ketch.verdicts.HookVerdict` to block the prompt (``block=True``, the reason
    is shown to the user), to add context for the model (``context``), or to end the
    session's turn (``stop=True``); None to let it through unchanged. All verdicts are
    combined: any block blocks.
    """


@hookspec
@returns(list, tuple)
def ketch_expand_prompt(session: Session, prompt: str, intake: PromptIntake) -> list[Part] | None:
    """Add parts to a prompt the user submitted (attachments such as ``@file``).

    Called once per prompt (not for steers), after ``ketch_user_prompt_submit`` let it
    through and before it enters the history. ``intake.call_tool(name, input)`` runs a
    tool call on the user's behalf through the same path as the model's calls (mode,
    policy and approval, hooks, journal, events) and returns its
    :class:`ketch.tools.ToolResult`; ``intake.notice(text)`` tells the user something.
    Return parts (:class:`ketch.messages.TextPart`, ...) to append to the prompt's
    message, an awaitable of such a list, or None. The parts of every implementation
    are appended in plugin order.
    """


@hookspec
@fail_closed(_deny_verdict)
@returns(_VERDICT)
def ketch_before_tool_use(
    session: Session, call: ProposedCall, decision: str
) -> HookVerdict | None:
    """A tool call is about to be decided: the policy has voted, nobody was asked yet.

    Called once per call that validated and that no deny vote refused, with the
    combined vote's ``decision`` (allow or ask), *before* the approval prompt, so a
    hook can spare the person a question; may be awaited. Return a
    :class:`ketch.verdicts.HookVerdict`: ``decision="deny"`` (or ``block=True``) refuses
    the call with ``reason`` for the model, and always wins; ``decision="allow"`` turns
    an ask into a run, except an ask from the essential guards (a hard guard is the
    person's to answer); ``decision="ask"`` makes the call ask even where the policy
    allowed it; ``updated_input`` replaces the input, which is validated and voted on
    again. None: no opinion. Raising denies (fail closed).
    """


@hookspec
@returns(str, _VERDICT)
def ketch_after_tool_use(
    session: Session, call: ProposedCall, result: ToolResult
) -> str | HookVerdict | None:
    """A tool call finished (successfully or not: see ``result.ok``).

    Called once per call that ran; may be awaited. Return a note to append to the
    result the model sees (e.g. "lint failed: ..."), or None. Notes from all plugins
    are appended. A :class:`ketch.verdicts.HookVerdict` may be returned instead: its
    ``context`` (or ``reason``) is the note, and ``stop=True`` ends the turn once this
    step's calls have finished (``stop_reason`` is shown to the person).
    """


@hookspec
def ketch_notification(session: Session, message: str, kind: str) -> None:
    """ketch needs the person's attention (``kind``: ``permission`` when a call waits
    for approval, ``idle`` when a frontend waits for input).

    Called when it happens, before the frontend asks; may be awaited (the kernel does
    not wait for it longer than it takes to start). The return value is ignored.
    """


@hookspec
@fail_closed(_withhold_result)
@returns("ketch.tools:ToolResult")
@chained("result")
def ketch_tool_result(
    session: Session, call: ProposedCall, result: ToolResult
) -> ToolResult | None:
    """Filter what a finished tool call returns, before anyone sees it.

    Called once per call that ran, after ``ketch_after_tool_use`` notes were appended
    and before the ``tool_result`` event: what is returned here is what the model, the
    journal and the screen get (secret redaction lives here). Return a replacement
    :class:`ketch.tools.ToolResult`, or None to keep it. Implementations are applied in
    turn, each seeing the previous one's result.
    """


@hookspec
@returns(_VERDICT)
def ketch_stop(session: Session, event: TurnEndEvent, stop_hook_active: bool) -> HookVerdict | None:
    """A turn is about to end with ``event``.

    Called when the model answers without a tool call; may be awaited. Return
    ``HookVerdict(block=True, reason=...)`` to keep the turn going with ``reason`` as a
    new user note (only honoured for ``end_turn``); None to let it end. After a block,
    it is called again when the model next answers without a tool call, with
    ``stop_hook_active`` True (Claude Code's loop guard: a hook that already kept the
    turn going should usually let it end now); at most 8 blocks are honoured per turn.
    """


@hookspec
def ketch_event(session: Session, event: Event) -> None:
    """Observe one turn event (the design's event table).

    Called for every event, in order, synchronously: when it returns, the event has
    been handled (storage relies on this to journal a dispatch before the effect).
    Keep it fast. The return value is ignored.
    """


@hookspec
def ketch_before_tool_effect(session: Session, call: ProposedCall) -> None:
    """A tool call is about to take effect: it was authorized, and it runs next.

    Called once per call that runs, after every vote, hook and approval and right
    before its ``tool_started`` event (so the person's wait for an approval lies before
    it, not after); may be awaited, and the call waits for it. ``call.mutating`` and
    ``call.effects`` say what the call may change: a checkpoint of the workspace is
    taken here. The return value is ignored; an implementation that raises is reported
    and skipped (the call still runs), except that ``KetchError`` ends the turn.
    """


# --- what the loop asks the plugins that own a policy it used to hold -------------------


@hookspec(firstresult=True)
@returns(float, int)
def ketch_retry_delay(
    session: Session, error: ProviderError, retried: tuple[ProviderError, ...]
) -> float | None:
    """A provider attempt failed with ``error``: how long to wait before trying again.

    Called once per failed attempt of one request, for every provider, before the
    ``error`` event goes out; ``retried`` are that request's earlier failures that were
    tried again (their count is the attempt number). Return the seconds to wait (the
    ``error`` event's ``retry_in``; the loop then tries again), or None to give up: the
    turn ends with the error. Nobody answering, or an implementation that raises, gives
    up. firstresult.
    """


@hookspec(firstresult=True)
@returns(str)
def ketch_usage_error(parser: argparse.ArgumentParser, args: list[str], message: str) -> str | None:
    """The command line ``args`` did not parse: argparse's ``message`` is about to be said.

    Called once, before ketch exits with status 2; ``parser`` is the parser (or the
    subcommand's) that rejected ``args``. Return the one line to say instead (an unknown
    option named with a "did you mean"), or None to keep ``message``. firstresult.
    """


@hookspec
@returns(str)
def ketch_refuse_call(session: Session, call: ToolCallPart, tool: Tool, turn: Stash) -> str | None:
    """Refuse a proposed call before anyone votes on it, with a note for the model.

    Called for every call of a turn that names an offered tool with valid input, in call
    order, before the votes; ``turn`` is a stash that lives as long as the turn (what a
    plugin keeps across the turn's calls: the calls so far). Return the note the model
    gets as the call's result (the call is refused, not run), or None. A refusal is all it
    can do: a call nobody refuses still goes through every vote and hook.
    """


# --- registrations the kernel need not call ---------------------------------------------


@hookspec(firstresult=True)
@returns(dict)
def ketch_cached_registrations(
    kernel: Kernel, hook: str, plugins: list[str]
) -> dict[str, list[Any]] | None:
    """What some of ``plugins`` would register through registration hook ``hook``,
    without the kernel calling their implementations (a cache of what they registered
    before).

    Called each time a registry is built, before ``hook`` runs; ``plugins`` are the
    plugins about to be called, in load order. Return what each answered plugin
    registers, by plugin name (a list of registered objects, possibly empty): those
    plugins are not called, and their objects are kept as if they had registered them.
    An implementation that calls a plugin's hook itself fails that plugin when it
    raises (``Kernel.fail_plugin``). ``Kernel.stash[CHECKING_REGISTRATIONS]`` set:
    ``ketch plugins --check`` compares declarations with registrations (call for real).
    (``ketch plugins`` itself answers ``[]``, tryfirst, for the plugins it lists from
    their ``@provides`` declarations.)
    Firstresult; None (or no implementation): every implementation is called.
    """


# --- which provider a session uses ------------------------------------------------------


@hookspec(firstresult=True)
@returns(tuple)
def ketch_resolve_provider(
    kernel: Kernel, provider: str | None, model: str | None
) -> tuple[ProviderConfig, ProviderKind] | None:
    """Which provider a session uses, and the configuration to build it with.

    Called whenever the kernel builds a provider (a new or resumed session, ``/model``,
    a subagent, ``ketch models``). ``provider`` (a name) and ``model`` are what the
    caller asked for (None: the configured choice, else the implementation's fallback).
    Return ``(ProviderConfig, ProviderKind)``: the ``[providers.NAME]`` table layered
    and validated (the kind's ``config_model`` when it has one), and the registered
    kind that builds it; or raise :class:`ketch.errors.KetchError`
    (``NoProviderConfigured`` when nothing is configured, ``ConfigError`` when the config
    that would say could not be used) with what to do. firstresult. The kernel holds
    the answer to the managed policy's ``allowed_providers``/``allowed_models``, so no
    implementation can widen them; when none answers (or one fails) no provider is
    built: a one-line error. The essential ``provider_setup`` plugin implements it.
    """


# --- a plain typed function registered as a tool ------------------------------------


@hookspec(firstresult=True)
@returns("ketch.tools:Tool")
@fail_closed(lambda plugin, exc: exc)
def ketch_tool_from(obj: Any) -> Tool | None:
    """Make a tool of what a plugin passed to ``register`` in ``ketch_register_tools``
    that is not a :class:`ketch.tools.Tool` (a plain typed function).

    Called once per such object, as it is registered. Return the tool, or None when
    ``obj`` is nothing this plugin knows. An implementation that raises fails the
    registering plugin with its error (the registration is refused). Firstresult;
    with no answer the registering plugin fails ("no loaded plugin makes a function
    a tool").
    """


# --- what a workspace's own config may set ----------------------------------------------


@hookspec(firstresult=True)
@fail_closed(lambda plugin, exc: ())
@returns(tuple)
def ketch_workspace_config(
    kernel: Kernel, data: dict[str, Any], sections: list[SettingsSection], admit: bool
) -> WorkspaceSplit | None:
    """What of the workspace's ``.ketch/config.toml`` applies: the repository wrote it,
    and ketch does not trust it.

    Called while settings load (again after ``kernel.reload_settings()``), unless the
    embedder trusted the whole workspace (``Kernel.boot(trusted=True)``). ``data`` is the
    file as written; ``sections`` the registered settings sections (their
    ``workspace_safe`` says which of their keys cannot raise authority). ``admit``: the
    held-back values may apply as far as the person trusted them (False: an embedder
    trusted none of them). Return ``(applies, held, ignored)``: the data that applies,
    the values held back as ``(path of table names, value)`` pairs, and the dotted names
    of held-back values that do not (wholly) apply (the kernel says so). The
    implementation must not read ``kernel.settings`` (they are being loaded). When none
    answers, one fails, or an answer is not such a triple, none of the file applies
    (fail closed) and a notice says so.
    The essential ``workspace_settings`` plugin implements it. Firstresult.
    """


# --- the session store's keeping --------------------------------------------------------


def _store_failed(plugin: str, exc: BaseException) -> Any:
    from ketch.storage import StoreUnavailable

    return StoreUnavailable(
        f"the session store could not be opened ({plugin}: {type(exc).__name__}: {exc})",
        exists=True,
    )


def _resume_failed(plugin: str, exc: BaseException) -> Any:
    from ketch.errors import KetchError

    return KetchError(f"cannot resume: {plugin} failed ({type(exc).__name__}: {exc})")


@hookspec(firstresult=True)
@fail_closed(_store_failed)
def ketch_session_store(kernel: Kernel) -> Store | StoreUnavailable | None:
    """The session store: ``Kernel.store`` asks, at every use.

    Called wherever something reads or writes sessions (a session's events, resuming,
    ``ketch sessions``, approvals, checkpoints), from any thread. Return the open
    :class:`ketch.storage.Store` (opened through ``ketch_field_cipher`` and
    ``ketch_open_store`` the first time, kept for the process), or raise
    :class:`ketch.storage.StoreUnavailable` with why it cannot be opened, at this and
    every later use. None: this plugin keeps no store (when none answers, sessions are
    not saved). firstresult. An implementation that fails otherwise counts as a store
    that exists but cannot be opened (a ``StoreUnavailable`` the kernel raises), never as
    "no store": work is not silently left unsaved.
    """


@hookspec(firstresult=True)
@fail_closed(_resume_failed)
@returns("ketch.storage:SessionRecord")
def ketch_resume_record(kernel: Kernel, session_id: str | None) -> SessionRecord | None:
    """The stored session to resume: ``session_id``, or (None) this workspace's latest.

    Called once per resume (``--resume``, ``--continue``, ``/resume``), before a
    provider is built. Return the :class:`ketch.storage.SessionRecord`; raise
    :class:`ketch.errors.KetchError` when there is none, when the store cannot be
    opened, when the command line opens no store (``--no-save``: a
    :class:`ketch.errors.UsageError`), or when the session belongs to another workspace
    than ``kernel.workspace`` (sessions are never rebound silently). The kernel restores knowledge from it and
    resets authority (the default profile, no approvals). firstresult; an
    implementation that fails refuses the resume. None (no implementation): no store
    is loaded, and the kernel says so.
    """


@hookspec
def ketch_request_started(session: Session) -> None:
    """A model request is under way.

    Called from the event loop's first wait in each request (the request is being
    built, connected and sent meanwhile): work that should overlap the request rather
    than delay it starts here, on a thread of its own (a store opened concurrently).
    Must return at once. Return ignored.
    """


# --- running a response's calls ----------------------------------------------------------


@hookspec(firstresult=True)
@returns(bool)
def ketch_run_calls(
    session: Session,
    calls: list[ToolCallPart],
    decide: Callable[[ToolCallPart], Awaitable[Any]],
    finish: Callable[[ToolCallPart, Any], Awaitable[Any]],
) -> bool | None:
    """Run one response's calls, some of them side by side.

    Called (awaited) once per model response that proposes calls, with its calls in
    order. An implementation decides each call with ``await decide(call)`` (in call
    order, one at a time: approvals are asked one by one) and then runs it with
    ``await finish(call, decided)``, every call exactly once; the results go back to
    the model in call order whatever order they finish in. ``finish`` runs only what
    ``decide`` allowed for that very call in this step, once: anything else (a decision
    the implementation made or copied itself, one used twice) is refused, never run
    (fail closed). Return True once every call
    ran. firstresult. None (no implementation): the kernel runs each call alone, in
    order. ``KetchError`` and cancellation propagate (the implementation cancels and
    waits for the calls it started first); after any other failure the kernel runs,
    alone, the calls not finished.
    """


# --- watching a provider's stream ---


@hookspec(firstresult=True)
def ketch_watch_stream(
    provider: Provider, stream: AsyncIterator[Any], emit: Callable[[Any], None]
) -> AsyncIterator[Any] | None:
    """A provider's response is about to be read: watch its ``stream``.

    Called once per attempt at a response, before its first item is read; ``emit``
    sends an event of the turn (``waiting``). Return an async generator that yields
    ``stream``'s items as they come and may raise a
    :class:`~ketch.providers.ProviderError` instead (a stream that stalled); the loop
    closes it when the response ends, however it ends. None: the stream is read as it
    comes. firstresult; an implementation that raises counts as no answer.
    """


# --- an unfinished answer ---


@hookspec(firstresult=True)
@returns(str)
def ketch_answer_cut_off(session: Session, limit: int | None) -> str | None:
    """The model's answer was cut off by the output-token limit (``limit``, when known).

    Called once per cut-off response, after its text is kept and its other tool calls
    ran (a tool call the limit cut is never run: it has left the history). Return the
    note to send the model as the next message (the turn goes on), or None: the turn
    ends with the answer as it stands. firstresult; an implementation that raises
    counts as no answer.
    """


@hookspec
def ketch_turn_interrupted(session: Session, partial: str) -> None:
    """The person cancelled the running turn.

    Called once, while the turn closes, after every open tool call got its result;
    ``partial`` is the text the model had streamed of an answer it did not finish ("" if
    none). An implementation may append messages to the session (``session.append``,
    with a ``message`` event each): the partial answer the person saw, a note for the
    model. Return ignored.
    """
