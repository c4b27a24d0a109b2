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
* The kernel calls every hook through one façade (:mod:`ketch.hooks`), which applies
  one error policy per hook. An implementation that raises is reported once
  (``ketch plugins`` and stderr) and then:

  - **fails closed** where authority is at stake: a raising ``ketch_policy_vote``
    counts as a deny vote, a raising ``ketch_before_tool_use`` denies the call, a
    raising ``ketch_sandbox_command`` refuses to run the command (never "run it
    unsandboxed"), and a raising ``ketch_tool_result`` withholds the output (never
    "show it unfiltered");
  - is **reported and skipped** everywhere else: the call goes on as if it had
    returned None.

  Raising :class:`ketch.errors.KetchError` is the deliberate way to stop with a
  message (e.g. a store that is recovery-locked): it propagates.
* Hook wrappers (``wrapper=True``/``hookwrapper=True``) are not supported: the façade
  calls implementations one by one so that each can fail on its own.

Hook modules should stay light: a plugin's entry module is imported whenever
plugins load (``ketch --help`` included), so import heavy modules inside hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch.markers import hookspec

if TYPE_CHECKING:  # pragma: no cover
    import argparse
    from collections.abc import Callable
    from pathlib import Path

    from ketch.commands import Command
    from ketch.compaction import CompactionRequest, CompactionResult
    from ketch.events import Event, TurnEndEvent
    from ketch.frontends import Frontend
    from ketch.intake import PromptIntake
    from ketch.kernel import Kernel
    from ketch.messages import Part
    from ketch.modes import Mode, Profile
    from ketch.plugins import PluginManager
    from ketch.policy import PermissionSnapshot, ProposedCall, Vote
    from ketch.prompt import PromptPart
    from ketch.providers import ModelInfo, ProviderKind
    from ketch.session import Session, Subagent
    from ketch.settings import Settings, SettingsSection
    from ketch.storage import FieldCipher, Store
    from ketch.tools import Tool, ToolContext, ToolResult
    from ketch.verdicts import HookVerdict


# --- registration ------------------------------------------------------------------


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
def ketch_register_providers(register: Callable[[ProviderKind], None], kernel: Kernel) -> None:
    """Register provider kinds.

    Called once per process, when the kernel first needs providers (a turn, ``ketch
    models``, ``ketch plugins``). Call ``register(ProviderKind(...))`` once per kind the
    plugin offers (``openai``, ``anthropic``, ...). Two plugins registering the same
    kind: the first registered (load order) wins and the clash is reported.
    The return value is ignored.
    """


@hookspec
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
def ketch_register_frontends(register: Callable[[Frontend], None], kernel: Kernel) -> None:
    """Register frontends (the interactive shell, the headless print mode, ...).

    Called once per process, before the CLI hands over to a frontend. A
    :class:`ketch.frontends.Frontend` says when it is the default: ``role="prompt"``
    for ``-p`` or piped stdin, ``role="terminal"`` for an interactive terminal, or no
    role (chosen only by name: ``--frontend NAME`` or a subcommand). The return value
    is ignored.
    """


@hookspec
def ketch_register_commands(register: Callable[[Command], None], kernel: Kernel) -> None:
    """Register commands: CLI subcommands (``ketch NAME ...``) and/or slash commands.

    Called once per process, before the command line is parsed (so ``ketch --help``
    lists them). A :class:`ketch.commands.Command` says whether it is a CLI subcommand,
    a slash command or both. The return value is ignored.
    """


@hookspec
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
def ketch_register_modes(register: Callable[[Mode], None]) -> None:
    """Declare session modes (``register(Mode(name, description, read_only=...))``).

    Called once per process, when the command line is built. A ``read_only`` mode
    offers no mutating tool and refuses one structurally, before any vote. The mode
    marked ``default`` is what a new session starts in. With no mode declared at all,
    sessions have no mode and nothing is refused by mode. The return value is ignored.
    """


@hookspec
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


# --- configuration and startup ---------------------------------------------------------


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
    authority (the kernel's and each section's ``workspace_safe``); every other value
    is held back, and this hook is asked once per such value while settings load (again
    after ``kernel.reload_settings()``). ``key`` is its path of table names
    (``("permissions", "allow")``), ``value`` the value as written. Return what of it
    applies: the value itself, or a narrowed copy of it (some entries of a list or
    table); None to abstain. No answer at all means none of it applies, and it is
    reported as ignored. An implementation must not read ``kernel.settings`` (they are
    being loaded): ``kernel.layers`` holds the files as written. Stops at the first
    non-None result; an implementation that raises counts as no answer.
    """


@hookspec(firstresult=True)
def ketch_get_credential(provider: str, kind: str) -> str | None:
    """Look up the API key of provider ``provider`` (of kind ``kind``) in a secret store.

    Called when a provider is built and its environment variable is not set. Return
    the key, or None when this store has none. Stops at the first non-None result.
    The key is wrapped in :class:`ketch.providers.Secret` at once and never logged.
    """


@hookspec(firstresult=True)
def ketch_model_info(provider_kind: str, model: str) -> ModelInfo | None:
    """What is known about ``model`` served by a provider of kind ``provider_kind``.

    Called whenever the kernel needs a model's facts without asking the provider: the
    context window before the provider reports one, whether to send images, and the
    prices that turn a response's token usage into its cost (``cost_usd`` on ``usage``
    and ``turn_end``). Return a :class:`ketch.providers.ModelInfo` (unknown fields None;
    prices in USD per million tokens; ``source`` naming where the facts come from), or
    None when this plugin knows nothing of the model. Never fetch anything here: it is
    called on every request. Stops at the first non-None result.
    """


@hookspec(firstresult=True)
def ketch_set_credential(provider: str, kind: str, key: str) -> str | None:
    """Keep the API key ``key`` of provider ``provider`` (of kind ``kind``) in a secret
    store (the first-run setup calls it with the key the person pasted).

    Called when a frontend has a key to keep. Return where it went, in words ("the
    GNOME keyring"), or None when this store cannot keep it (none is available). Stops at
    the first non-None result. The key must never reach a file, an event or a log.
    """


# --- policy --------------------------------------------------------------------------------


@hookspec
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
def ketch_permission_rules(session: Session) -> dict[str, list[str]] | None:
    """Contribute permission rules to the snapshot of one step.

    Called once per step, when the permission snapshot is taken (and by commands that
    show the rules). Return ``{"allow": [...], "ask": [...], "deny": [...]}`` (any
    subset) in the rule syntax the policy plugins share, or None. The kernel
    concatenates every contribution, in plugin order, into ``snapshot.rules``.
    """


@hookspec(firstresult=True)
def ketch_sandbox_command(
    argv: list[str],
    workspace: Path,
    network: bool,
    exposed: Callable[[Path], bool] | None,
    reporters: list[Callable[[bool], str | None]] | None,
    context: ToolContext | None,
) -> list[str] | None:
    """Wrap a command line so it runs inside a sandbox.

    Called by tools that execute programs, once per command, right before it starts.
    Return the argv to run instead (e.g. ``["bwrap", ..., "--", *argv]``), or None to
    run it unwrapped. Stops at the first non-None result.

    ``network``: the command may use the network. ``exposed(path)``: True when the
    person allowed this command to read that (resolved) path, which a sandbox would
    otherwise mask as a secret; None exposes nothing. ``reporters``: a list the sandbox
    may append callables to; the caller calls ``reporter(False)`` whenever it reports
    the command's output and ``reporter(True)`` once the command and everything it
    started have ended (which also frees what the sandbox held for it), and adds the
    text each returns (e.g. "``.env`` is masked in the sandbox ...") to the result.
    ``context``: the running call's :class:`ketch.tools.ToolContext` (None outside a
    call): a sandbox that lets the command reach the network asks through
    ``context.authorize`` and journals through ``context.emit`` on that call's behalf.
    """


# --- context and compaction ----------------------------------------------------------------


@hookspec
def ketch_system_prompt(session: Session) -> list[PromptPart] | PromptPart | str | None:
    """Contribute parts of the system prompt.

    Called before every provider request (and again after a compaction, and when a
    command such as ``/context`` measures the context). Return a string, a
    :class:`ketch.prompt.PromptPart` (with an ``order`` and a ``title``) or a list of
    them; None contributes nothing. The kernel joins all parts, sorted by order.
    """


@hookspec(firstresult=True)
def ketch_compact(request: CompactionRequest) -> CompactionResult | None:
    """Compact the active context so that it fits the budget in ``request``.

    Called before a provider request whose projected context passes the compaction
    trigger, after a provider reports a context overflow, and for ``/compact``.
    Return a :class:`ketch.compaction.CompactionResult` with the new active messages
    and a record of what was replaced, or None to let the next compactor try.
    A compactor that must wait (a model summarizer) may return an awaitable of that
    result instead; the kernel awaits it before the request is built.
    Stops at the first non-None result. Never modifies the saved transcript.
    """


# --- storage and encryption -------------------------------------------------------


@hookspec(firstresult=True)
def ketch_open_store(settings: Settings, cipher: FieldCipher | None) -> Store | None:
    """Open the session store.

    Called once per process, lazily, when a session needs storing or loading.
    ``cipher`` is what ``ketch_field_cipher`` returned (None when no encryption
    plugin is loaded). Return a :class:`ketch.storage.Store`, or None when this
    plugin does not provide storage. Raise :class:`ketch.storage.StoreUnavailable`
    to refuse, with ``exists=True`` when there is a store that cannot be opened
    (recovery-locked, damaged, a wrong passphrase: a headless run then stops before the
    model is called, unless ``--no-save``) and ``exists=False`` when there is none and
    none can be made (the run goes on unsaved, said once). The kernel keeps the reason
    (``kernel.store_problem``) and shows it wherever the store is used later. Stops at
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
def ketch_user_prompt_submit(session: Session, prompt: str) -> HookVerdict | None:
    """The user submitted a prompt; it is not in the history yet.

    Called once per prompt (steers included); may be awaited. Return a
    :class:`ketch.verdicts.HookVerdict` to block the prompt (``block=True``, the reason
    is shown to the user), to add context for the model (``context``), or to end the
    session's turn (``stop=True``); None to let it through unchanged. All verdicts are
    combined: any block blocks.
    """


@hookspec
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
def ketch_before_compaction(session: Session, reason: str) -> None:
    """Compaction is about to run (``reason``: auto, overflow, command). Return ignored."""


@hookspec
def ketch_after_compaction(session: Session, result: CompactionResult) -> None:
    """Compaction finished; ``result`` holds the record. Return ignored."""


@hookspec
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
def ketch_subagent_start(session: Session, agent: Subagent) -> HookVerdict | None:
    """A subagent is about to start its task.

    Called once per subagent, in the parent ``session``, after the subagent's own
    session exists and before its first request; may be awaited. ``agent`` says who
    it is (``agent.id`` is the ``agent_id`` its events carry, ``agent.name`` its
    definition). Return ``HookVerdict(context=...)`` to add text to the task the
    subagent gets; None adds nothing. All verdicts' contexts are added.
    """


@hookspec
def ketch_subagent_stop(session: Session, agent: Subagent, result: str) -> HookVerdict | None:
    """A subagent finished its task with ``result`` (its final answer).

    Called once per subagent turn, in the parent ``session``, before the result goes
    back to the parent (for a cancelled subagent it is not called); may be awaited.
    Return ``HookVerdict(block=True, reason=...)`` to keep the subagent going once more
    with ``reason`` as its next instruction; None to let it finish.
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
