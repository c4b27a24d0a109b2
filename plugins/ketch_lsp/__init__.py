"""ketch_lsp: language servers for the model and after every edit.

Servers (built-ins found on ``PATH``, in ketch's environment or the workspace's
virtualenv; ``[lsp.servers.NAME]`` tables) start lazily on the first file of their
language, one per project root, inside the sandbox, and stop with the session. After a
call changed files (``write_file``, ``edit_file``, ``rename``, a shell command the
checkpoints plugin saw change files: ``checkpoints_files_changed``), the new errors and
warnings of those files are attached to its result. The tools ``definition``,
``references``, ``hover``, ``symbols``, ``diagnostics`` (read-only) and ``rename`` (a
write) are offered when a server is found. ``/lsp`` and ``ketch lsp status`` show
them. A workspace's own servers start only once trusted by content. See docs/lsp.md.

This module stays light: pygls and lsprotocol are imported when a server starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import Command, StashKey, hookimpl, provides

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Event, HookVerdict, Kernel, ProposedCall, Session, ToolResult


def _settings(kernel: Kernel) -> Any:
    from ketch_lsp.settings import LspSettings

    return kernel.settings.of(LspSettings)


# Per session: (the workspace's manager or None when no server may run, diagnostics on).
# Settings and discovery are fixed for a session, so every hook after the first is a
# dictionary lookup: with no server installed, an edit costs nothing more.
_USE = StashKey[tuple[Any, bool]]()


def _manager(session: Session, *, diagnostics: bool = False) -> Any:
    """The workspace's manager when servers may be used (and found), else None."""
    use = session.stash.get(_USE)
    if use is None:
        settings = _settings(session.kernel)
        found = None
        if settings.enabled:
            from ketch_lsp.runtime import manager

            found = manager(session.kernel, session.workspace)
            if not any(spec.found for spec in found.specs):
                found = None
        use = (found, bool(settings.diagnostics))
        session.stash[_USE] = use
    if diagnostics and not use[1]:
        return None
    return use[0]


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_tool_kit import sandbox

    pluginmanager.add_hookspecs(sandbox)  # the contract its servers start through


@hookimpl
def ketch_register_settings(register: Callable[[Any], None]) -> None:
    from ketch_lsp.settings import LSP

    register(LSP)


def _offered(kernel: Kernel) -> bool:
    """Whether its tools are offered: enabled, and a server could start here."""
    if not _settings(kernel).enabled:
        return False
    from ketch_lsp.servers import usable

    return usable(kernel)


@hookimpl
@provides(
    dynamic="definition, references, hover, symbols, diagnostics, rename: when a language server is found",
    offered_when=_offered,
)
def ketch_register_tools(register: Callable[[Any], None], kernel: Kernel) -> None:
    if not _offered(kernel):
        return  # no server: no tool, and not one token more in any request
    from ketch_lsp.rename import Rename
    from ketch_lsp.tools import Definition, Diagnostics, Hover, References, Symbols

    for tool in (Definition, References, Hover, Symbols, Diagnostics, Rename):
        register(tool(kernel))


@hookimpl(optionalhook=True)
def trust_setting_items(kernel: Kernel, key: tuple[str, ...], value: Any) -> list[Any] | None:
    if key != ("lsp", "servers"):
        return None
    from ketch_lsp.servers import setting_items

    return setting_items(kernel, value)


@hookimpl(optionalhook=True)
def trust_items(kernel: Kernel) -> list[Any]:
    from ketch_lsp.servers import venv_items

    return venv_items(kernel)


@hookimpl
def ketch_session_start(session: Session) -> None:
    from ketch_lsp.sessions import started

    started(session)


@hookimpl
def ketch_session_end(session: Session, reason: str) -> None:
    import sys

    sessions = sys.modules.get("ketch_lsp.sessions")
    if sessions is not None:
        sessions.ended(session)
    runtime = sys.modules.get("ketch_lsp.runtime")
    if runtime is not None:  # no manager was ever made: no server ever started
        runtime.end_session(session)


@hookimpl
def ketch_event(session: Session, event: Event) -> None:
    """A call about a file of a server's language was proposed: start that server now,
    so it is ready when the call's result needs it."""
    if event.type != "tool_call":
        return
    raw = getattr(event, "input", None)
    path = raw.get("path") if isinstance(raw, dict) else None
    if not isinstance(path, str) or not path:
        return
    found = _manager(session)
    if found is not None:
        from ketch_lsp.edits import warm

        warm(session, found, path)


@hookimpl
def ketch_before_tool_effect(session: Session, call: ProposedCall) -> None:
    if not call.mutating:
        return
    found = _manager(session, diagnostics=True)
    if found is not None:
        from ketch_lsp.edits import before

        before(session, found, call)


@hookimpl(optionalhook=True)
def checkpoints_files_changed(
    session: Session, call: ProposedCall, paths: list[Any], created: list[Any]
) -> None:
    found = _manager(session, diagnostics=True)
    if found is not None:
        from ketch_lsp.edits import seen_changed

        seen_changed(session, call, paths, created)


@hookimpl(trylast=True)
async def ketch_after_tool_use(
    session: Session, call: ProposedCall, result: ToolResult
) -> HookVerdict | None:
    """After the checkpoint (which says what a command changed): the new problems."""
    if not call.mutating:
        return None
    found = _manager(session, diagnostics=True)
    if found is None:
        return None
    from ketch_lsp.edits import after, show_later

    text = await after(session, found, call, result)
    if not text:
        return None
    show_later(session, text)
    from ketch.api import HookVerdict

    return HookVerdict(context=text)


def _slash(ctx: Any) -> None:
    from ketch_lsp.commands import slash

    slash(ctx)


def _configure(parser: Any) -> None:
    from ketch_lsp.commands import configure

    configure(parser)


def _cli(kernel: Any, args: Any) -> int:
    from ketch_lsp.commands import cli

    return cli(kernel, args)


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    register(
        Command(
            name="lsp",
            help="language servers: which are found, trusted and running, and their last errors",
            cli=True,
            slash=True,
            configure=_configure,
            run=_cli,
            slash_run=_slash,
        )
    )
