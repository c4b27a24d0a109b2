"""Every hook ketch calls. Plugins implement them with ``@ketch.hookimpl``.

Conventions, as in pytest:

* Hooks named ``ketch_register_*`` take a ``register`` callback and are called once per
  process, right after plugins load. A plugin whose registration raises is reported
  as failed and removed; what it registered before raising is discarded.
* "firstresult" hooks stop at the first implementation that returns something other
  than None; that value is the result.
* Every other hook collects the non-None returns of all implementations into a list.
* An implementation that raises is isolated: the error is reported (``ketch plugins``
  and stderr), and the call goes on as if it had returned None, except for
  ``ketch_policy_vote``, where a raise counts as a deny vote (fail closed).
  Raising :class:`ketch.errors.KetchError` is the deliberate way to stop with a
  message (e.g. a store that is recovery-locked): it propagates.
* Arguments are passed by keyword; an implementation may accept any subset of them.

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
    from ketch.kernel import Kernel
    from ketch.policy import PermissionSnapshot, ProposedCall, Vote
    from ketch.prompt import PromptPart
    from ketch.providers import ProviderKind
    from ketch.session import Session
    from ketch.settings import Settings
    from ketch.storage import FieldCipher, Store
    from ketch.tools import Tool, ToolResult
    from ketch.verdicts import HookVerdict


# --- registration ------------------------------------------------------------------


@hookspec
def ketch_register_providers(register: Callable[[ProviderKind], None]) -> None:
    """Register provider kinds.

    Called once per process, when the kernel first needs providers (a turn, ``ketch
    models``, ``ketch plugins``). Call ``register(ProviderKind(...))`` once per kind the
    plugin offers (``openai``, ``anthropic``, ...). Two plugins registering the same
    kind: the first registered (load order) wins and the clash is reported.
    The return value is ignored.
    """


@hookspec
def ketch_register_tools(register: Callable[[Tool | Callable[..., Any]], None]) -> None:
    """Register tools.

    Called once per process, before the first turn (and by ``ketch plugins``).
    ``register`` accepts a :class:`ketch.tools.Tool` instance or subclass, or a plain
    typed function with a docstring (its signature becomes the input schema and its
    docstring the description; decorate it with ``@ketch.tool(effects=...)`` to
    declare effects). Name clashes between plugins are reported in ``ketch plugins``;
    the tool from the plugin that loaded first is kept. A plugin whose tools depend on
    configuration (MCP servers) reads it from ``register.kernel.settings``; every
    ``register`` callback carries the kernel that way. The return value is ignored.
    """


@hookspec
def ketch_register_frontends(register: Callable[[Frontend], None]) -> None:
    """Register frontends (the interactive shell, the headless print mode, ...).

    Called once per process, before the CLI hands over to a frontend. The CLI picks the
    frontend by name: ``headless`` for ``-p`` or piped stdin, ``shell`` otherwise
    (``--frontend NAME`` overrides). The return value is ignored.
    """


@hookspec
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    """Register commands: CLI subcommands (``ketch NAME ...``) and/or slash commands.

    Called once per process, before the command line is parsed (so ``ketch --help``
    lists them). A :class:`ketch.commands.Command` says whether it is a CLI subcommand,
    a slash command or both. The return value is ignored.
    """


@hookspec
def ketch_add_cli_options(parser: argparse.ArgumentParser) -> None:
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
def ketch_workspace_trusted(workspace: Path) -> bool | None:
    """Whether the user has trusted this workspace's ``.ketch/config.toml``.

    Called once per process while settings load, before plugins' own settings are
    read. Return True or False to decide; None to abstain (no answer at all means not
    trusted). Stops at the first non-None result.
    """


@hookspec(firstresult=True)
def ketch_get_credential(provider: str, kind: str) -> str | None:
    """Look up the API key of provider ``provider`` (of kind ``kind``) in a secret store.

    Called when a provider is built and its environment variable is not set. Return
    the key, or None when this store has none. Stops at the first non-None result.
    The key is wrapped in :class:`ketch.providers.Secret` at once and never logged.
    """


# --- policy --------------------------------------------------------------------------------


@hookspec
def ketch_policy_vote(call: ProposedCall, snapshot: PermissionSnapshot, session: Session) -> Vote | None:
    """Vote on one proposed tool call.

    Called once per tool call, after the input validated and before anything runs,
    with the permission snapshot frozen at the start of the step. Return a
    :class:`ketch.policy.Vote` (allow, ask or deny, with a reason), or None to abstain.
    All votes are combined: deny beats ask beats allow; no vote at all means ask. An
    implementation that raises counts as a deny vote.
    """


@hookspec(firstresult=True)
def ketch_sandbox_command(
    argv: list[str],
    workspace: Path,
    network: bool,
    exposed: Callable[[Path], bool] | None,
    reporters: list[Callable[[bool], str | None]] | None,
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
    plugin does not provide storage. Raise ``KetchError`` to refuse (e.g. the key is
    missing: recovery-locked). Stops at the first non-None result.
    """


@hookspec(firstresult=True)
def ketch_field_cipher(settings: Settings) -> FieldCipher | None:
    """Provide the field cipher the store encrypts with.

    Called once per process, just before ``ketch_open_store``. Return a
    :class:`ketch.storage.FieldCipher`, or None. Raise ``KetchError`` when the key
    exists but cannot be read (locked keyring). Stops at the first non-None result.
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

    Called once per prompt (steers included). Return a
    :class:`ketch.verdicts.HookVerdict` to block the prompt (``block=True``, the reason
    is shown to the user) or to add context for the model (``context``); None to let
    it through unchanged. All verdicts are combined: any block blocks.
    """


@hookspec
def ketch_before_tool_use(session: Session, call: ProposedCall) -> HookVerdict | None:
    """A tool call was allowed and is about to run.

    Called once per call, after the policy allowed it and before it is journaled as
    dispatched. Return a ``HookVerdict(block=True, reason=...)`` to stop it (the reason
    goes to the model as the tool's error), or None. Any block blocks.
    """


@hookspec
def ketch_after_tool_use(session: Session, call: ProposedCall, result: ToolResult) -> str | None:
    """A tool call finished (successfully or not).

    Called once per call that ran. Return a note to append to the result the model
    sees (e.g. "lint failed: ..."), or None. Notes from all plugins are appended.
    """


@hookspec
def ketch_tool_result(session: Session, call: ProposedCall, result: ToolResult) -> ToolResult | None:
    """Filter what a finished tool call returns, before anyone sees it.

    Called once per call that ran, after ``ketch_after_tool_use`` notes were appended
    and before the ``tool_result`` event: what is returned here is what the model, the
    journal and the screen get (secret redaction lives here). Return a replacement
    :class:`ketch.tools.ToolResult`, or None to keep it. Implementations are applied in
    turn, each seeing the previous one's result.
    """


@hookspec
def ketch_before_compaction(session: Session, reason: str) -> None:
    """Compaction is about to run (``reason``: auto, overflow, manual). Return ignored."""


@hookspec
def ketch_after_compaction(session: Session, result: CompactionResult) -> None:
    """Compaction finished; ``result`` holds the record. Return ignored."""


@hookspec
def ketch_stop(session: Session, event: TurnEndEvent) -> HookVerdict | None:
    """A turn is about to end with ``event``.

    Called once per turn. Return ``HookVerdict(block=True, reason=...)`` to keep the
    turn going with ``reason`` as a new user note (only honoured for ``end_turn``, and
    at most once per turn); None to let it end.
    """


@hookspec
def ketch_event(session: Session, event: Event) -> None:
    """Observe one turn event (the design's event table).

    Called for every event, in order, synchronously: when it returns, the event has
    been handled (storage relies on this to journal a dispatch before the effect).
    Keep it fast. The return value is ignored.
    """
