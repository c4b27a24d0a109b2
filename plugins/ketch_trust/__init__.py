"""Trust by content: what a workspace holds that can make something run or widen
ketch's authority is listed item by item, shown, and pinned by digest when the person
trusts it; a changed item is held back again (docs/trust.md).

This plugin owns the vocabulary and the commands: it declares the hooks through which
the plugins that run workspace content list their items (``trust_items``,
``trust_setting_items``, see :mod:`ketch_trust.hookspecs`), answers the kernel's
``ketch_workspace_setting`` with the pinned parts of each held-back config value,
lists the repository's git programs, and provides ``ketch trust`` and ``/trust`` (also
the shell's first-run offer, ``/trust --offer``). Each owner checks its own items with
``ketch_trust_kit.check`` before running one, so disabling this plugin trusts nothing
more: it only takes away the way to trust.

Headless runs and ``ketch acp`` never trust anything implicitly; ``--trust-workspace``
is gone (a usage error saying what to do instead); a tool call that runs ``ketch
trust`` asks in every profile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import Command, hookimpl

if TYPE_CHECKING:  # pragma: no cover
    import argparse

    from ketch.api import Kernel, ProposedCall, Session, Vote
    from ketch_trust_kit import TrustItem


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_trust import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def ketch_workspace_setting(kernel: Kernel, key: tuple[str, ...], value: Any) -> Any:
    from ketch_trust.collect import admit

    return admit(kernel, key, value)


@hookimpl
def trust_items(kernel: Kernel) -> list[TrustItem]:
    """The repository's own git programs and hook scripts."""
    from ketch_git_kit.trust import repository_items

    return repository_items(kernel.workspace, kernel.environ)


@hookimpl
def ketch_policy_vote(call: ProposedCall) -> Vote | None:
    """The model running ``ketch trust`` asks, in every profile: only the person pins
    what a workspace may run. (The pin file itself is ketch's own config, which the
    hard guards protect from tool calls that write it.)"""
    from ketch_trust.commands import runs_ketch_trust

    if not runs_ketch_trust(call):
        return None
    from ketch.api import Vote

    return Vote(
        decision="ask",
        reason="it runs `ketch trust`: only you trust what a workspace may run (type it yourself)",
    )


@hookimpl
def ketch_add_cli_options(parser: argparse.ArgumentParser) -> None:
    from ketch_trust.commands import add_options

    add_options(parser)


@hookimpl
def ketch_session_start(session: Session) -> None:
    if session.parent is not None:
        return
    from ketch_trust_kit import PinStore

    if PinStore().take_legacy(session.workspace):
        from ketch.api import NoticeEvent

        session.kernel.emit(
            session,
            NoticeEvent(
                level="warning",
                message=(
                    f"ketch now trusts what a workspace holds, item by item, not the folder: "
                    f"{session.workspace} was trusted as a whole by an older ketch, so its hooks, "
                    "MCP servers, rules and commands stay off until you review them with `ketch trust`"
                ),
            ),
        )


def _slash(ctx: Any) -> Any:
    from ketch_trust.commands import slash

    return slash(ctx)


def _configure(parser: Any) -> None:
    from ketch_trust.commands import configure

    configure(parser)


def _run(kernel: Any, args: Any) -> int:
    from ketch_trust.commands import run

    return run(kernel, args)


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    from ketch_frontend_kit import START_OFFER

    register(
        Command(
            name="trust",
            help="show what this workspace would run or allow (hooks, MCP servers, rules, commands, git programs) and trust it item by item",
            cli=True,
            slash=True,
            configure=_configure,
            run=_run,
            slash_run=_slash,
            extra={START_OFFER: ["--offer"]},  # the shell runs it at start (ketch_frontend_kit)
        )
    )
